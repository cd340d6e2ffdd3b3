#if canImport(Glibc)
import Glibc
#endif

/// One inotify instance watching one directory (inotify(7)): typed calls, errno in every error. The
/// descriptor is non-blocking, for a thread that polls it with others (`fd`) and then `drain`s it.
public final class InotifyWatch: Sendable {
    /// An event on an entry of the watched directory.
    public struct Event: Equatable, Sendable {
        /// The entry's name in the directory ("" for the directory itself).
        public var name: String
        public var mask: UInt32
        public init(name: String, mask: UInt32) {
            self.name = name
            self.mask = mask
        }
        /// The directory itself was removed or moved away (IN_DELETE_SELF, IN_MOVE_SELF, IN_IGNORED).
        public var watchEnded: Bool { mask & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_IGNORED)) != 0 }
    }

    /// A file written whole (closed after writing), renamed into place, created, removed or renamed away;
    /// and the directory itself going away.
    public static let entryChanges = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE)
        | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)

    public let directory: String
    private let owned: OwnedFileDescriptor

    /// The descriptor to poll for POLLIN.
    public var fd: Int32 { owned.fd.rawValue }

    /// Watches `directory` for `mask` (inotify_init1 with IN_NONBLOCK | IN_CLOEXEC, then inotify_add_watch).
    public init(directory: String, mask: UInt32 = InotifyWatch.entryChanges) throws(SystemError) {
        let raw = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard raw >= 0 else { throw SystemError("inotify_init1", directory, .current) }
        let owned = OwnedFileDescriptor(FileDescriptor(rawValue: raw))
        guard inotify_add_watch(raw, directory, mask) >= 0 else {
            let e = Errno.current
            owned.close()
            throw SystemError("inotify_add_watch", directory, e)
        }
        self.directory = directory
        self.owned = owned
    }

    /// Every event queued now (none: an empty list); never blocks. An overflow of the kernel's queue
    /// (IN_Q_OVERFLOW) comes back as an event with that mask and no name: the caller must assume anything
    /// changed.
    public func drain() throws(SystemError) -> [Event] {
        var events: [Event] = []
        // Room for many events at once; each is 16 bytes plus a NUL-padded name of at most NAME_MAX + 1.
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let read = buffer.withUnsafeMutableBytes { owned.fd.read(into: $0) }
            let count: Int
            switch read {
            case .success(let n): count = n
            case .failure(let e) where e == .wouldBlock: return events
            case .failure(let e): throw SystemError("reading inotify events", directory, e)
            }
            if count == 0 { return events }
            events += Self.parse(buffer[0..<count])
        }
    }

    /// The events in `bytes` (struct inotify_event: wd, mask, cookie, len, then `len` bytes of name);
    /// a truncated tail is ignored (the kernel never writes one).
    static func parse(_ bytes: ArraySlice<UInt8>) -> [Event] {
        var events: [Event] = []
        var at = bytes.startIndex
        // The kernel writes the fields in the machine's own byte order.
        func word(_ i: Int) -> UInt32 {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i - bytes.startIndex, as: UInt32.self) }
        }
        while bytes.endIndex - at >= 16 {
            let mask = word(at + 4)
            let length = Int(word(at + 12))
            let nameStart = at + 16
            guard length <= bytes.endIndex - nameStart else { break }
            let nameBytes = bytes[nameStart..<(nameStart + length)].prefix { $0 != 0 }
            events.append(Event(name: String(decoding: nameBytes, as: UTF8.self), mask: mask))
            at = nameStart + length
        }
        return events
    }

    public func close() { owned.close() }
}

#if canImport(Glibc)
import Glibc
#endif

/// What a path is, from its `st_mode` (after following symbolic links).
public enum FileKind: Sendable, Equatable, CustomStringConvertible {
    case regular, directory, fifo, characterDevice, blockDevice, socket, symbolicLink, unknown

    public init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFIFO: self = .fifo
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFSOCK: self = .socket
        case S_IFLNK: self = .symbolicLink
        default: self = .unknown
        }
    }

    /// "a FIFO (named pipe)", "a character device", ...
    public var description: String {
        switch self {
        case .regular: return "a regular file"
        case .directory: return "a directory"
        case .fifo: return "a FIFO (named pipe)"
        case .characterDevice: return "a character device"
        case .blockDevice: return "a block device"
        case .socket: return "a socket"
        case .symbolicLink: return "a symbolic link"
        case .unknown: return "not a file of a known type"
        }
    }
}

/// How much of one kind of file ScanGate reads: the most bytes, and the plural name the error uses
/// ("image files are limited to 64 MB"). The table of limits is here, in one place.
public struct FileSizeLimit: Sendable, Equatable {
    public let bytes: Int
    /// Plural, as in "image files".
    public let kind: String

    public init(bytes: Int, kind: String) {
        precondition(bytes >= 0)
        self.bytes = bytes
        self.kind = kind
    }

    /// PNG, JPEG and PGM files (decode-image, replay folders, the corpus).
    public static let image = FileSizeLimit(bytes: 64 << 20, kind: "image files")
    /// YUV4MPEG2 recordings (`replay:FILE.y4m`): read frame by frame (each frame is bounded by its header's
    /// size, see `Y4MHeader`), so this only bounds a sparse or runaway file.
    public static let y4m = FileSizeLimit(bytes: 64 << 30, kind: "Y4M recordings")
    /// The live-path bench frames' manifest.json and reference.json (~100 KB for 570 frames).
    public static let benchManifest = FileSizeLimit(bytes: 64 << 20, kind: "bench manifests")
    /// The INI config file (the commented example is ~9 KB).
    public static let config = FileSizeLimit(bytes: 256 << 10, kind: "config files")
    /// `sim:FILE.scenario` (a few dozen short lines).
    public static let scenario = FileSizeLimit(bytes: 1 << 20, kind: "scenario files")
    /// A code's payload read from a file (`make-code --data-file`; a QR code holds at most 2953 bytes).
    public static let payload = FileSizeLimit(bytes: 64 << 10, kind: "payload files")
    /// Expected payloads beside corpus images (`X.txt`, `X.bin`).
    public static let corpusAnswer = FileSizeLimit(bytes: 64 << 10, kind: "corpus answer files")
    /// Any other small data file read whole.
    public static let dataFile = FileSizeLimit(bytes: 1 << 20, kind: "data files")
}

/// A file that could not be read within its bounds. `description` is one line naming the file:
/// "cannot read PATH: it is a FIFO (named pipe), not a regular file",
/// "cannot read PATH: it is 9.1 GB; image files are limited to 64 MB".
public struct BoundedFileError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Reason: Sendable, Equatable {
        /// A system call failed (stat, open, read, ...).
        case system(operation: String, Errno)
        /// Not a regular file where one is expected: the kind after following symbolic links, and whether
        /// the path itself is a symbolic link.
        case notRegular(FileKind, viaSymbolicLink: Bool)
        /// Not a directory where a folder is expected.
        case notDirectory(FileKind)
        /// Larger than the limit when opened.
        case tooLarge(size: Int64, limit: FileSizeLimit)
        /// Grew past the limit while it was read.
        case grew(limit: FileSizeLimit)
        /// A folder with more entries than its limit.
        case tooManyEntries(limit: DirectoryLimit)
    }

    public let path: String
    public let reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var errno: Errno? {
        if case .system(_, let e) = reason { return e }
        return nil
    }

    /// The part after "cannot read PATH: ", for callers that name the file their own way
    /// ("cannot read config file PATH: ...").
    public var reasonText: String {
        switch reason {
        case .system(_, let e):
            return "\(e)"
        case .notRegular(let kind, let link):
            return link ? "it is a symbolic link to \(kind), not a regular file" : "it is \(kind), not a regular file"
        case .notDirectory(let kind):
            return "it is \(kind), not a directory"
        case .tooLarge(let size, let limit):
            let (s, l) = ByteCount.pair(size, Int64(limit.bytes))
            return "it is \(s); \(limit.kind) are limited to \(l)"
        case .grew(let limit):
            return "it grew past \(ByteCount.text(Int64(limit.bytes))) while it was read; \(limit.kind) are limited to \(ByteCount.text(Int64(limit.bytes)))"
        case .tooManyEntries(let limit):
            return "it holds more than \(limit.entries) entries; \(limit.kind) are limited to \(limit.entries)"
        }
    }

    public var description: String { "cannot read \(path): \(reasonText)" }
}

/// Sizes as people read them: "512 bytes", "64 KB", "9.1 GB" (binary units: 1 KB = 1024 bytes).
public enum ByteCount {
    public static func text(_ bytes: Int64) -> String {
        let units = ["KB", "MB", "GB", "TB", "PB", "EB"]
        guard bytes >= 1024 else { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        // One decimal below 100, rounded down so a file just over a limit never shows as less.
        let tenths = (value * 10).rounded(.down)
        if value < 100 && tenths.truncatingRemainder(dividingBy: 10) != 0 {
            return "\(Int(tenths) / 10).\(Int(tenths) % 10) \(units[unit])"
        }
        return "\(Int(value.rounded(.down))) \(units[unit])"
    }

    /// A size and a limit in the same words; both in bytes when the short forms would look equal
    /// ("67108865 bytes" against "67108864 bytes (64 MB)").
    static func pair(_ size: Int64, _ limit: Int64) -> (String, String) {
        let s = text(size), l = text(limit)
        if s != l { return (s, l) }
        return ("\(size) bytes", "\(limit) bytes (\(l))")
    }
}

/// A regular file opened for reading within a size limit. One owner of its descriptor (closed by `close()`
/// or when the object goes away).
///
/// Opening never blocks and never touches a device: the path is first `stat`ed (following symbolic
/// links) and anything but a regular file is refused without opening it (open(2) on a FIFO without a
/// writer waits for one; opening a tty, a watchdog or a tape has side effects). It is then opened with
/// O_NONBLOCK | O_NOCTTY and the descriptor itself is `fstat`ed, so a path swapped between the two calls
/// is caught too; O_NONBLOCK is cleared before reading. The size is checked against the limit at open
/// and again on every read: no read ever returns bytes past the limit, and a file that grew past it
/// while being read is refused. Reads are retried on EINTR.
public final class BoundedFile: @unchecked Sendable {
    public let path: String
    public let limit: FileSizeLimit
    /// The file's size when it was opened.
    public let sizeAtOpen: Int64
    private let owner: OwnedFileDescriptor
    /// Offset of the next byte read.
    public private(set) var position: Int64 = 0

    private init(path: String, limit: FileSizeLimit, owner: OwnedFileDescriptor, size: Int64) {
        self.path = path
        self.limit = limit
        self.owner = owner
        self.sizeAtOpen = size
    }

    /// Opens `path`, a regular file (or a symbolic link to one) of at most `limit.bytes`.
    public static func open(_ path: String, limit: FileSizeLimit) throws(BoundedFileError) -> BoundedFile {
        var info = stat()
        if stat(path, &info) != 0 { throw BoundedFileError(path: path, reason: .system(operation: "stat", .current)) }
        try check(info, path: path, limit: limit)
        // Only a regular file is opened.
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY) {
        case .success(let opened): fd = opened
        case .failure(let e): throw BoundedFileError(path: path, reason: .system(operation: "open", e))
        }
        let owner = OwnedFileDescriptor(fd)
        // The descriptor is what is read: check it, not the path (which may have changed since stat).
        if fstat(fd.rawValue, &info) != 0 {
            throw BoundedFileError(path: path, reason: .system(operation: "fstat", .current))
        }
        try check(info, path: path, limit: limit)
        let flags = fcntl(fd.rawValue, F_GETFL)
        if flags < 0 || fcntl(fd.rawValue, F_SETFL, flags & ~O_NONBLOCK) < 0 {
            throw BoundedFileError(path: path, reason: .system(operation: "fcntl", .current))
        }
        return BoundedFile(path: path, limit: limit, owner: owner, size: Int64(info.st_size))
    }

    private static func check(_ info: stat, path: String, limit: FileSizeLimit) throws(BoundedFileError) {
        let kind = FileKind(mode: info.st_mode)
        guard kind == .regular else {
            throw BoundedFileError(path: path, reason: .notRegular(kind, viaSymbolicLink: isSymbolicLink(path)))
        }
        if Int64(info.st_size) > Int64(limit.bytes) {
            throw BoundedFileError(path: path, reason: .tooLarge(size: Int64(info.st_size), limit: limit))
        }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the file. Throws when the file has grown past
    /// the limit (no byte past the limit is ever returned).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(BoundedFileError) -> Int {
        guard buffer.count > 0 else { return 0 }
        // Ask for at most one byte past the limit: getting it proves the file grew.
        let room = Int64(limit.bytes) - position + 1
        guard room > 0 else { throw BoundedFileError(path: path, reason: .grew(limit: limit)) }
        let count = Int(min(Int64(buffer.count), room))
        let n: Int
        switch owner.fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])) {
        case .success(let got): n = got
        case .failure(let e): throw BoundedFileError(path: path, reason: .system(operation: "read", e))
        }
        if position + Int64(n) > Int64(limit.bytes) {
            throw BoundedFileError(path: path, reason: .grew(limit: limit))
        }
        position += Int64(n)
        return n
    }

    /// Every remaining byte, at most `limit.bytes` in all.
    public func readAll() throws(BoundedFileError) -> [UInt8] {
        // Sized from the file when it was opened (bounded by the limit), grown only if the file grows.
        let expected = Int(max(0, min(sizeAtOpen, Int64(limit.bytes)) - position))
        var bytes = [UInt8](repeating: 0, count: expected + 1)
        var filled = 0
        while true {
            if filled == bytes.count {
                let grown = min(max(bytes.count * 2, 4096), limit.bytes + 1)
                if grown <= bytes.count { throw BoundedFileError(path: path, reason: .grew(limit: limit)) }
                bytes += [UInt8](repeating: 0, count: grown - bytes.count)
            }
            let result = bytes.withUnsafeMutableBytes { raw in
                Result { () throws(BoundedFileError) in try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...])) }
            }
            let n = try result.get()
            if n == 0 { break }
            filled += n
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// Moves to byte `offset` (from the start).
    public func seek(to offset: Int64) throws(BoundedFileError) {
        if lseek(owner.fd.rawValue, off_t(offset), SEEK_SET) < 0 {
            throw BoundedFileError(path: path, reason: .system(operation: "lseek", .current))
        }
        position = offset
    }

    public func close() { owner.close() }

    /// Every byte of the regular file `path`, at most `limit.bytes`.
    public static func readAll(path: String, limit: FileSizeLimit) throws(BoundedFileError) -> [UInt8] {
        let file = try open(path, limit: limit)
        defer { file.close() }
        return try file.readAll()
    }

    /// True when `path` itself is a symbolic link (lstat).
    public static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && FileKind(mode: info.st_mode) == .symbolicLink
    }

    /// The kind of `path` after following symbolic links, or the errno when it cannot be stat'ed.
    public static func kind(of path: String) -> Result<FileKind, Errno> {
        var info = stat()
        return stat(path, &info) == 0 ? .success(FileKind(mode: info.st_mode)) : .failure(.current)
    }
}

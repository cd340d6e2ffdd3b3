#if canImport(Glibc)
import Glibc
#endif

/// The room left on the file system that holds a path (statvfs(3)), as a user who is not root gets it:
/// the service runs as its own user, so the blocks the file system reserves for root do not count.
public struct FileSystemSpace: Sendable, Equatable {
    /// The fragment size (f_frsize): the least a file grows by on the disk.
    public var blockSize: UInt64
    public var totalBytes: UInt64
    /// Bytes a user who is not root may still allocate (f_bavail).
    public var availableBytes: UInt64
    /// Inodes such a user may still create (f_favail); with `totalInodes` 0 the file system does not count
    /// them (btrfs), and new files are limited by space only.
    public var availableInodes: UInt64
    public var totalInodes: UInt64

    public init(blockSize: UInt64, totalBytes: UInt64, availableBytes: UInt64, availableInodes: UInt64, totalInodes: UInt64) {
        self.blockSize = blockSize
        self.totalBytes = totalBytes
        self.availableBytes = availableBytes
        self.availableInodes = availableInodes
        self.totalInodes = totalInodes
    }

    /// statvfs(3) of `path`; an error names the path and the errno.
    public static func of(_ path: String) -> Result<FileSystemSpace, SystemError> {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return .failure(SystemError("statvfs", path, .current)) }
        let fragment = UInt64(info.f_frsize != 0 ? info.f_frsize : info.f_bsize)
        return .success(FileSystemSpace(blockSize: fragment, totalBytes: UInt64(info.f_blocks) * fragment,
                                        availableBytes: UInt64(info.f_bavail) * fragment,
                                        availableInodes: UInt64(info.f_favail), totalInodes: UInt64(info.f_files)))
    }

    /// No room for one more block, or (where inodes are counted) for one more file: a record that needs
    /// either cannot be written.
    public var isFull: Bool {
        availableBytes < blockSize || (totalInodes > 0 && availableInodes == 0)
    }

    /// "1.2 GiB of 29.0 GiB free", "0 bytes of 7.8 MiB free, 0 inodes".
    public var summary: String {
        var text = "\(Self.bytes(availableBytes)) of \(Self.bytes(totalBytes)) free"
        if totalInodes > 0 && availableInodes == 0 { text += ", no inodes left" }
        return text
    }

    /// A size for people: "0 bytes", "512 bytes", "3.5 KiB", "1.2 GiB".
    public static func bytes(_ n: UInt64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard n >= 1024 else { return "\(n) bytes" }
        var value = Double(n) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}

/// The mount a path is on, from /proc/self/mountinfo: where it is mounted, what is mounted there and its
/// type. Named by full-disk errors and doctor, so a user knows which file system to free.
public struct MountPoint: Sendable, Equatable, CustomStringConvertible {
    public var directory: String
    public var source: String
    public var type: String

    public init(directory: String, source: String, type: String) {
        self.directory = directory
        self.source = source
        self.type = type
    }

    /// "/var/lib/scangate (ext4 /dev/mmcblk0p2)".
    public var description: String { "\(directory) (\(type) \(source))" }

    public static let mountInfoPath = "/proc/self/mountinfo"

    /// The mount holding `path` (made absolute and its symlinks resolved, when it exists): the last mount
    /// whose directory is the path or one of its parents. nil when mountinfo cannot be read.
    public static func containing(_ path: String, mountInfo: String? = nil) -> MountPoint? {
        guard let text = mountInfo ?? readMountInfo() else { return nil }
        let target = resolved(path)
        var best: MountPoint?
        for line in text.split(separator: "\n") {
            guard let mount = parse(line) else { continue }
            let d = mount.directory
            let inside = d == "/" || target == d || target.hasPrefix(d.hasSuffix("/") ? d : d + "/")
            // Later lines are mounted over earlier ones: the last match of the longest directory wins.
            if inside, best.map({ d.count >= $0.directory.count }) ?? true { best = mount }
        }
        return best
    }

    /// One mountinfo line: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER`.
    static func parse(_ line: Substring) -> MountPoint? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 10, let dash = fields.firstIndex(of: "-"), dash >= 6, dash + 2 < fields.count else { return nil }
        return MountPoint(directory: unescape(fields[4]), source: unescape(fields[dash + 2]), type: unescape(fields[dash + 1]))
    }

    /// mountinfo writes space, tab, newline and backslash as `\ooo`.
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let raw = Array(field.utf8)
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "\\"), i + 3 < raw.count {
                let digits = raw[(i + 1)...(i + 3)]
                if digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                    let value = digits.reduce(0) { $0 * 8 + Int($1 - UInt8(ascii: "0")) }
                    if value < 256 {
                        bytes.append(UInt8(value))
                        i += 4
                        continue
                    }
                }
            }
            bytes.append(raw[i])
            i += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func readMountInfo() -> String? {
        guard case .success(let fd) = FileDescriptor.open(mountInfoPath, O_RDONLY) else { return nil }
        defer { _ = fd.close() }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while out.count < 4 << 20 {
            switch buffer.withUnsafeMutableBytes({ fd.read(into: $0) }) {
            case .success(0): return String(decoding: out, as: UTF8.self)
            case .success(let n): out += buffer[0..<n]
            case .failure: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// realpath(3) of `path`, or of its nearest existing parent with the rest appended.
    static func resolved(_ path: String) -> String {
        var head = path.isEmpty ? "." : path
        var tail: [String] = []
        while true {
            if let real = realpath(head, nil) {
                defer { free(real) }
                let base = String(cString: real)
                guard !tail.isEmpty else { return base }
                return (base == "/" ? "" : base) + "/" + tail.reversed().joined(separator: "/")
            }
            guard let slash = head.lastIndex(of: "/") else { return path }
            tail.append(String(head[head.index(after: slash)...]))
            head = slash == head.startIndex ? "/" : String(head[..<slash])
        }
    }
}

/// The nearest directory of `path` that exists: `path` itself when it is one, else its parents in turn
/// ("/" at last). What statvfs can be asked about before the service has created the directory.
public func nearestExistingDirectory(_ path: String) -> String {
    var candidate = path.isEmpty ? "." : path
    while true {
        var info = stat()
        if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return candidate }
        guard let slash = candidate.lastIndex(of: "/") else { return "." }
        if slash == candidate.startIndex { return "/" }
        candidate = String(candidate[..<slash])
    }
}

extension MountPoint {
    /// What a full-disk error adds about `path`: "the file system mounted at /var/lib/scangate (ext4
    /// /dev/mmcblk0p2) is full", or without the mount when mountinfo cannot tell.
    public static func fullDiskNote(_ path: String) -> String {
        containing(path).map { "the file system mounted at \($0) is full" } ?? "its file system is full"
    }
}

extension Errno {
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let quotaExceeded = Errno(rawValue: EDQUOT)

    /// The file system (or the user's quota on it) has no room: ENOSPC, EDQUOT.
    public var meansNoSpace: Bool { self == .noSpace || self == .quotaExceeded }
}

/// Failures a test injects into a durable store's writes, to show what a full disk does without filling
/// one: each hook is asked before the real write(2)/pwrite(2) or fdatasync(2) of a record, with the file's
/// path, and an errno it returns is that call's result. Empty (`none`) in service.
public struct WriteFaults: Sendable {
    public var write: (@Sendable (String) -> Errno?)?
    public var sync: (@Sendable (String) -> Errno?)?

    public init(write: (@Sendable (String) -> Errno?)? = nil, sync: (@Sendable (String) -> Errno?)? = nil) {
        self.write = write
        self.sync = sync
    }

    public static let none = WriteFaults()
}

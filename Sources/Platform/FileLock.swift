#if canImport(Glibc)
import Glibc
#endif

/// The calls behind the daemon's lock and the serial ports' lock files, each small, typed and checked.
extension FileDescriptor {
    /// flock(LOCK_EX | LOCK_NB): true when taken, false when another open file description holds it.
    /// The kernel releases it when the last descriptor of this open file closes, a kill -9 included.
    public func tryLockExclusive() -> Result<Bool, Errno> {
        lock(.exclusive, nonBlocking: true)
    }

    /// Up to `maxBytes` from the start of the file (pread: the file offset is left alone).
    public func readFromStart(maxBytes: Int) -> Result<[UInt8], Errno> {
        readAll(fromAbsoluteOffset: 0, count: maxBytes)
    }

    /// Makes `bytes` the whole content: ftruncate(0), then pwrite from offset 0.
    public func replaceContents(_ bytes: [UInt8]) -> Result<Void, Errno> {
        truncate(to: 0).flatMap { writeAll(toAbsoluteOffset: 0, bytes) }
    }
}

/// Paths: the few calls the lock files need.
public enum FilePath {
    /// mkdir(2); a directory that already exists is fine.
    public static func makeDirectory(_ path: String, mode: mode_t) -> Result<Void, Errno> {
        if mkdir(path, mode) == 0 { return .success(()) }
        let e = Errno.current
        return e.rawValue == EEXIST ? .success(()) : .failure(e)
    }

    /// unlink(2); a file that is already gone is fine.
    public static func remove(_ path: String) -> Result<Void, Errno> {
        if unlink(path) == 0 { return .success(()) }
        let e = Errno.current
        return e == .noSuchFile ? .success(()) : .failure(e)
    }

    /// link(2): `newPath` names `existing` too; EEXIST when `newPath` exists (atomic, so an exclusive create).
    public static func link(_ existing: String, as newPath: String) -> Result<Void, Errno> {
        Glibc.link(existing, newPath) == 0 ? .success(()) : .failure(.current)
    }

    /// realpath(3): the absolute path with every symbolic link resolved.
    public static func resolved(_ path: String) -> Result<String, Errno> {
        guard let p = realpath(path, nil) else { return .failure(.current) }
        defer { free(p) }
        return .success(String(cString: p))
    }

    /// The directory part of `path` ("" when it has none).
    public static func directory(of path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    }

    /// The directory holding `path` ("/" for a file in the root, "." for a bare name); trailing slashes of
    /// `path` are ignored.
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// The last component of `path` (trailing slashes ignored).
    public static func name(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// rename(2).
    public static func rename(_ from: String, to: String) -> Result<Void, Errno> {
        Glibc.rename(from, to) == 0 ? .success(()) : .failure(.current)
    }
}

/// Process ids, as the lock files record them.
public enum ProcessID {
    /// This process's id.
    public static var current: Int32 { getpid() }

    /// Whether process `pid` exists: kill(pid, 0) succeeds, or fails with EPERM (it exists, another user's).
    /// ESRCH, or a pid that is not a process's (0 or less), means no.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        if kill(pid, 0) == 0 { return true }
        return Errno.current.rawValue == EPERM
    }

    /// A pid written as ASCII digits, with spaces and a newline around it (the UUCP lock files, the daemon's
    /// lock); nil for anything else.
    public static func parse(_ bytes: [UInt8]) -> Int32? {
        let text = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\0" })
        guard text.count == 1, let pid = Int32(text[0]), pid > 0 else { return nil }
        return pid
    }
}

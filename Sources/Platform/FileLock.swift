#if canImport(Glibc)
import Glibc
#endif

/// The calls behind the daemon's lock and the serial ports' lock files, each small, typed and checked.
extension FileDescriptor {
    /// flock(LOCK_EX | LOCK_NB): true when taken, false when another open file description holds it.
    /// The kernel releases it when the last descriptor of this open file closes, a kill -9 included.
    public func tryLockExclusive() -> Result<Bool, Errno> {
        switch retryOnInterrupt({ flock(rawValue, LOCK_EX | LOCK_NB) }) {
        case .success: return .success(true)
        case .failure(let e) where e == .wouldBlock: return .success(false)
        case .failure(let e): return .failure(e)
        }
    }

    /// Up to `maxBytes` from the start of the file (pread: the file offset is left alone).
    public func readFromStart(maxBytes: Int) -> Result<[UInt8], Errno> {
        var bytes = [UInt8](repeating: 0, count: max(1, maxBytes))
        var total = 0
        while total < maxBytes {
            let offset = total
            let result = bytes.withUnsafeMutableBytes { raw in
                retryOnInterrupt { pread(rawValue, raw.baseAddress.map { $0 + offset }, raw.count - offset, off_t(offset)) }
            }
            switch result {
            case .success(0): return .success(Array(bytes[0..<total]))
            case .success(let n): total += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(Array(bytes[0..<total]))
    }

    /// Makes `bytes` the whole content: ftruncate(0), then pwrite from offset 0.
    public func replaceContents(_ bytes: [UInt8]) -> Result<Void, Errno> {
        if case .failure(let e) = truncate(to: 0) { return .failure(e) }
        return bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let start = offset
                switch retryOnInterrupt({ pwrite(rawValue, raw.baseAddress.map { $0 + start }, raw.count - start, off_t(start)) }) {
                case .success(let n): offset += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
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

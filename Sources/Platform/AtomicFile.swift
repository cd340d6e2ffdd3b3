#if canImport(Glibc)
import Glibc
#endif

/// A file written whole or not at all, even across a power cut: the one implementation of temporary
/// file, write, fsync, rename (or link), fsync of the directory.
///
/// The temporary file is in the same directory as the file (a rename never crosses file systems). It is
/// created with the file's mode (then `fchmod`, since the umask may have taken bits away), so the content
/// is never readable by others, not even for a moment. A temporary file left by an earlier run (a power
/// cut or kill -9 before its rename) is reused only when it is our own regular file with one link; anything
/// else there (a symbolic link, a hard link, another user's file) is removed and the temporary file created
/// with O_EXCL | O_NOFOLLOW, so nothing planted there is ever followed or written through. On every failure
/// before the rename the temporary file is removed and the old file is left as it was.
public enum AtomicFile {
    /// Test failures (a dying disk); `.none` in service.
    public struct Faults: Sendable {
        /// Replaces the fsync of the directory after the rename with this errno (nil: the real call).
        public var syncDirectory: (@Sendable (String) -> Errno?)?
        public init(syncDirectory: (@Sendable (String) -> Errno?)? = nil) { self.syncDirectory = syncDirectory }
        public static let none = Faults()
    }

    /// What failed, and whether the new file had already taken the name (a failed directory fsync after the
    /// rename: the new content is in place, but after a power cut the name may lead to the old file again).
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let error: SystemError
        /// The rename (or link) happened: `path` names the new file.
        public let replaced: Bool
        /// `create` only: `path` existed already and was left alone.
        public var exists: Bool { !replaced && error.operation == "link" && error.errno.rawValue == EEXIST }
        public var errno: Errno { error.errno }
        public var description: String { error.description }
    }

    /// Makes `contents` the whole content of `path` (created or replaced), with permissions `mode`.
    /// `temporary` is the temporary file's path (default `PATH.tmp`; it must be in the same directory).
    /// `afterWrite` and `afterRename` mark the steps for crash tests (FaultParking). With `durable` false nothing is synced (a file with no durability promise, such as the metrics file:
    /// the rename is still atomic).
    public static func replace(_ path: String, with contents: [UInt8], mode: mode_t, temporary: String? = nil,
                               durable: Bool = true, faults: Faults = .none,
                               afterWrite: () -> Void = {}, afterRename: () -> Void = {}) throws(Failure) {
        let temporary = temporary ?? path + ".tmp"
        try write(temporary, contents, mode: mode, durable: durable)
        afterWrite()
        if case .failure(let e) = FilePath.rename(temporary, to: path) {
            _ = FilePath.remove(temporary)
            throw Failure(error: SystemError("rename to \(path)", temporary, e), replaced: false)
        }
        afterRename()
        guard durable else { return }
        try syncDirectory(of: path, faults: faults)
    }

    /// Creates `path`, which must not exist, whole or not at all: the content goes to `temporary` (default
    /// `.NAME.tmp` beside it; fsync), which is hard-linked to `path` (link(2) never replaces a file, so an
    /// existing file is left alone: `Failure.exists`), then removed, and the directory synced.
    public static func create(_ path: String, with contents: [UInt8], mode: mode_t, temporary: String? = nil,
                              faults: Faults = .none) throws(Failure) {
        let temporary = temporary ?? FilePath.parent(of: path) + "/." + FilePath.name(of: path) + ".tmp"
        try write(temporary, contents, mode: mode, durable: true)
        if case .failure(let e) = FilePath.link(temporary, as: path) {
            _ = FilePath.remove(temporary)
            throw Failure(error: SystemError("link", path, e), replaced: false)
        }
        if case .failure(let e) = FilePath.remove(temporary) {
            throw Failure(error: SystemError("remove the temporary file", temporary, e), replaced: true)
        }
        try syncDirectory(of: path, faults: faults)
    }

    private static func syncDirectory(of path: String, faults: Faults) throws(Failure) {
        let directory = FilePath.parent(of: path)
        if let e = faults.syncDirectory?(directory) {
            throw Failure(error: SystemError("fsync directory", directory, e), replaced: true)
        }
        do throws(SystemError) { try Directory.sync(directory) } catch { throw Failure(error: error, replaced: true) }
    }

    /// The temporary file, written (and with `durable`, synced) and closed; removed again on any failure.
    private static func write(_ temporary: String, _ contents: [UInt8], mode: mode_t, durable: Bool) throws(Failure) {
        let fd = try openTemporary(temporary, mode: mode)
        var failure: SystemError?
        if fchmod(fd.rawValue, mode) != 0 {
            failure = SystemError("fchmod \(octal(mode))", temporary, .current)
        } else if case .failure(let e) = fd.writeAll(contents) {
            failure = SystemError("write", temporary, e)
        } else if durable, case .failure(let e) = fd.sync() {
            failure = SystemError("fsync", temporary, e)
        }
        // close reports a late write error (a full disk, NFS): the file is not renamed into place then.
        if case .failure(let e) = fd.close(), failure == nil { failure = SystemError("close", temporary, e) }
        if let failure {
            _ = FilePath.remove(temporary)
            throw Failure(error: failure, replaced: false)
        }
    }

    /// Opens the temporary file empty: a leftover is reused only when it is our own regular file with one
    /// link, otherwise removed and created again exclusively.
    private static func openTemporary(_ temporary: String, mode: mode_t) throws(Failure) -> FileDescriptor {
        switch FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY, mode: mode) {
        case .success(let fd):
            if case .success(let info) = fd.status(), info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1,
               info.st_uid == geteuid(), case .success = fd.truncate(to: 0) {
                return fd
            }
            _ = fd.close()
        case .failure(let e) where e.rawValue == ELOOP:
            break
        case .failure(let e):
            throw Failure(error: SystemError("create", temporary, e), replaced: false)
        }
        if case .failure(let e) = FilePath.remove(temporary) {
            throw Failure(error: SystemError("remove the stale temporary file", temporary, e), replaced: false)
        }
        switch FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode: mode) {
        case .success(let fd): return fd
        case .failure(let e): throw Failure(error: SystemError("create", temporary, e), replaced: false)
        }
    }

    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Platform
import Synchronization

/// The UUCP lock file Debian's serial tools use (minicom, picocom, cu, lockdev): `/run/lock/LCK..NAME`
/// for `/dev/NAME` (symbolic links resolved first, so `/dev/serial/by-id/...` and `/dev/ttyUSB0` are one
/// device; a `/` below /dev becomes `_`: `/dev/pts/3` is `LCK..pts_3`), holding the holder's pid as a
/// 10-character right-aligned ASCII number and a newline (`      1234\n`).
///
/// Made whole under a temporary name (`LTMP.PID`, created O_EXCL) and linked to the lock's name, which
/// is atomic and fails when the name exists: nobody reads a half-written lock. A lock whose pid is not a
/// living process (a holder that was killed) is stale: it is removed and taken. Removed on `release`
/// (SerialPort.close) only while it still holds this process's pid. A holder that ends without closing
/// (kill -9, the stop deadline's `_exit`) leaves it behind with a dead pid: the next opener takes it over.
/// As with every tool of this convention, two openers that find the same stale lock at the same instant
/// can both take it (two daemons with one status socket never get that far: DaemonLock refuses the second).
public final class SerialDeviceLock: Sendable {
    public static let defaultDirectory = "/run/lock"

    /// The lock file.
    public let path: String
    private let held = Atomic<Bool>(true)

    private init(path: String) { self.path = path }

    /// What taking the lock came to.
    public enum Outcome: Sendable {
        /// Taken: release it when the port closes.
        case locked(SerialDeviceLock)
        /// Another living process holds it (its pid; nil when the file holds no readable pid).
        case heldBy(pid: Int32?, lockPath: String)
        /// The lock directory cannot be written (a sandbox without /run/lock, a user not allowed there):
        /// the port is opened with TIOCEXCL alone.
        case unavailable(SystemError)
        /// The device path does not resolve (it does not exist): opening it reports that.
        case noDevice
    }

    /// `LCK..ttyS0` for a device resolved to `/dev/ttyS0`.
    public static func lockName(resolvedDevice: String) -> String {
        let name = resolvedDevice.hasPrefix("/dev/") ? String(resolvedDevice.dropFirst(5)) : resolvedDevice
        return "LCK.." + name.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "_")
    }

    /// The lock file's path for `device`, or nil when the device does not resolve.
    public static func lockPath(device: String, directory: String = defaultDirectory) -> String? {
        guard case .success(let resolved) = FilePath.resolved(device) else { return nil }
        return directory + "/" + lockName(resolvedDevice: resolved)
    }

    /// `      1234\n`.
    static func contents(pid: Int32) -> [UInt8] {
        let digits = String(pid)
        return Array((String(repeating: " ", count: max(0, 10 - digits.count)) + digits + "\n").utf8)
    }

    /// Takes the lock for `device` for this process.
    public static func acquire(device: String, directory: String = defaultDirectory) -> Outcome {
        guard let path = lockPath(device: device, directory: directory) else { return .noDevice }
        let me = ProcessID.current
        let temporary = directory + "/LTMP.\(me)"
        // A stale lock is removed and the link tried again; a third loss in a row is a busy holder.
        for _ in 0..<3 {
            if case .failure(let e) = writeTemporary(temporary, pid: me) { return .unavailable(e) }
            let linked = FilePath.link(temporary, as: path)
            _ = FilePath.remove(temporary)
            switch linked {
            case .success:
                return .locked(SerialDeviceLock(path: path))
            case .failure(let e) where e.rawValue == EEXIST:
                if let holder = livingHolder(path) { return .heldBy(pid: holder.pid, lockPath: path) }
                if case .failure(let e) = FilePath.remove(path) {
                    return .unavailable(SystemError("remove the stale lock", path, e))
                }
            case .failure(let e):
                return .unavailable(SystemError("link \(temporary) to", path, e))
            }
        }
        return .heldBy(pid: readPID(path), lockPath: path)
    }

    /// Who holds `device`'s lock, when a living process other than this one does (doctor and `run` ask
    /// before they start; the port's own open takes the lock).
    public static func holder(device: String, directory: String = defaultDirectory) -> (pid: Int32?, lockPath: String)? {
        guard let path = lockPath(device: device, directory: directory), let holder = livingHolder(path),
              holder.pid != ProcessID.current else { return nil }
        return (holder.pid, path)
    }

    /// The lock's holder if it is alive: a pid that is a process, or a file with no readable pid (left alone:
    /// another tool may be writing it; removing it is the user's call). Nil: no lock, or a stale one.
    private static func livingHolder(_ path: String) -> Holder? {
        switch FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW) {
        case .failure(let e):
            return e == .noSuchFile ? nil : Holder(pid: nil)  // gone meanwhile; or unreadable: not ours to remove
        case .success(let fd):
            let owned = OwnedFileDescriptor(fd)
            defer { owned.close() }
            guard case .success(let bytes) = fd.readFromStart(maxBytes: 64), let pid = pid(in: bytes) else {
                return Holder(pid: nil)
            }
            return ProcessID.isAlive(pid) ? Holder(pid: pid) : nil
        }
    }

    private struct Holder { let pid: Int32? }

    private static func readPID(_ path: String) -> Int32? {
        guard case .success(let fd) = FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { return nil }
        let owned = OwnedFileDescriptor(fd)
        defer { owned.close() }
        guard case .success(let bytes) = fd.readFromStart(maxBytes: 64) else { return nil }
        return pid(in: bytes)
    }

    /// The ASCII pid; or the binary 4-byte one of old Kermit-style locks.
    static func pid(in bytes: [UInt8]) -> Int32? {
        if let pid = ProcessID.parse(bytes) { return pid }
        guard bytes.count == 4 else { return nil }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
        return value > 0 ? value : nil
    }

    private static func writeTemporary(_ path: String, pid: Int32) -> Result<Void, SystemError> {
        _ = FilePath.remove(path)
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644) {
        case .success(let opened): fd = opened
        case .failure(let e): return .failure(SystemError("create", path, e))
        }
        let written = fd.writeAll(contents(pid: pid))
        let closed = fd.close()
        if case .failure(let e) = written.flatMap({ closed }) {
            _ = FilePath.remove(path)
            return .failure(SystemError("write", path, e))
        }
        return .success(())
    }

    /// Removes the lock file while it still holds this process's pid. Once.
    public func release() {
        guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if SerialDeviceLock.readPID(path) == ProcessID.current { _ = FilePath.remove(path) }
    }

    deinit { release() }
}

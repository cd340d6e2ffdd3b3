import Platform
#if canImport(Glibc)
import Glibc
#endif

/// One daemon per status socket: `run` holds an flock on `STATUS-SOCKET.lock` (by default
/// `/run/scangate/status.sock.lock`, or `$RUNTIME_DIRECTORY/status.sock.lock`) for its whole life.
///
/// The key is the status socket because it is what names a daemon on a kiosk: `scangate status` finds the
/// daemon by it, and two daemons that should both run (two doors on one machine) need a socket each
/// anyway. With `status-socket = off` the default socket's lock is taken, so a daemon without a socket
/// still keeps out a second one with the defaults.
///
/// The lock file holds the holder's pid as text. The kernel drops the flock when the process ends however
/// it ends (exit, SIGTERM's stop deadline and its `_exit`, kill -9); the file stays, and what it says only
/// counts while its flock is held.
public final class DaemonLock: @unchecked Sendable {
    public let path: String
    private let descriptor: OwnedFileDescriptor

    private init(path: String, descriptor: OwnedFileDescriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    /// `SOCKET.lock`; with the socket off (`nil`), the default socket's.
    public static func path(statusSocket: String?) -> String {
        (statusSocket ?? StatusSocket.defaultPath()) + ".lock"
    }

    public enum Failure: Error, Sendable {
        /// Another process holds it; its pid when the file says (nil while it is being written).
        case held(pid: Int32?)
        /// The lock file cannot be made or locked (a directory the user may not write).
        case system(SystemError)
    }

    /// Takes the lock at `path` (making its directory, 0755, if missing and `makeDirectory`) and writes this
    /// process's pid in it.
    public static func acquire(path: String, makeDirectory: Bool = true) -> Result<DaemonLock, Failure> {
        let directory = FilePath.directory(of: path)
        if makeDirectory, !directory.isEmpty, case .failure(let e) = FilePath.makeDirectory(directory, mode: 0o755) {
            return .failure(.system(SystemError("mkdir", directory, e)))
        }
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644) {
        case .success(let opened): fd = opened
        case .failure(let e): return .failure(.system(SystemError("open", path, e)))
        }
        let owned = OwnedFileDescriptor(fd)
        switch fd.tryLockExclusive() {
        case .failure(let e):
            return .failure(.system(SystemError("flock", path, e)))
        case .success(false):
            return .failure(.held(pid: holderPID(fd)))
        case .success(true):
            break
        }
        if case .failure(let e) = fd.replaceContents(Array("\(ProcessID.current)\n".utf8)) {
            return .failure(.system(SystemError("write the pid into", path, e)))
        }
        return .success(DaemonLock(path: path, descriptor: owned))
    }

    /// The pid the holder wrote; it writes it right after taking the lock, so an empty file is read again
    /// for up to 200 ms.
    private static func holderPID(_ fd: FileDescriptor) -> Int32? {
        let deadline = MonotonicInstant.now().adding(milliseconds: 200)
        while true {
            if case .success(let bytes) = fd.readFromStart(maxBytes: 32), let pid = ProcessID.parse(bytes) { return pid }
            guard MonotonicInstant.now() < deadline else { return nil }
            sleepThread(milliseconds: 10)
        }
    }

    /// Releases the lock (closing the file). Once; also when the process ends.
    public func release() { descriptor.close() }

    deinit { release() }
}

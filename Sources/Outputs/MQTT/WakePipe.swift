import Platform
#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking pipe that wakes a thread waiting in poll(2): `signal()` from any thread, the owner
/// polls `readFD` and calls `drain()`. Owns both descriptors.
final class WakePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init() throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("pipe", "MQTT session wake-up", .current) }
        for fd in fds {
            let flags = fcntl(fd, F_GETFL)
            guard fcntl(fd, F_SETFD, FD_CLOEXEC) == 0, flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                let e = Errno.current
                for f in fds { _ = FileDescriptor(rawValue: f).close() }
                throw SystemError("fcntl", "MQTT session wake-up pipe", e)
            }
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        _ = FileDescriptor(rawValue: readFD).close()
        _ = FileDescriptor(rawValue: writeFD).close()
    }

    /// Never blocks: when the pipe is full (EAGAIN), a wake-up is already pending. Returns false only when
    /// the write failed otherwise (it cannot for a pipe whose both ends this object holds).
    @discardableResult
    func signal() -> Bool {
        var byte: UInt8 = 1
        switch retryOnInterrupt({ write(writeFD, &byte, 1) }) {
        case .success: return true
        case .failure(let e): return e == .wouldBlock
        }
    }

    /// Reads every pending wake-up; stops at EAGAIN (empty).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while case .success(let n) = retryOnInterrupt({ read(readFD, &buffer, buffer.count) }), n > 0 {}
    }

    /// Waits up to `milliseconds` for a wake-up (or forever when negative); true if woken.
    @discardableResult
    func wait(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        let r = retryOnInterrupt { poll(&entry, 1, milliseconds) }
        drain()
        if case .success(let n) = r { return n > 0 }
        return false
    }
}

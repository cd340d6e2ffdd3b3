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
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Never blocks: when the pipe is full, a wake-up is already pending.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buffer, buffer.count) > 0 {}
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

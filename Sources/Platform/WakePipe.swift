#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking pipe that wakes a thread waiting in poll(2) on it and on descriptors of its own (a
/// port, a socket): `signal()` from any thread; the owner polls `readFD` (or calls `wait`, or
/// `pollDescriptors` with its own) and the wake-ups are drained. Owns both descriptors.
public final class WakePipe: Sendable {
    public let readFD: Int32
    public let writeFD: Int32

    /// - Parameter purpose: what the pipe wakes, for errors ("serial worker").
    public init(purpose: String) throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("pipe", "\(purpose) wake-up", .current) }
        for fd in fds {
            let flags = fcntl(fd, F_GETFL)
            guard fcntl(fd, F_SETFD, FD_CLOEXEC) == 0, flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                let e = Errno.current
                for f in fds { _ = FileDescriptor(rawValue: f).close() }
                throw SystemError("fcntl", "\(purpose) wake-up pipe", e)
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
    public func signal() -> Bool {
        var byte: UInt8 = 1
        switch retryOnInterrupt({ write(writeFD, &byte, 1) }) {
        case .success: return true
        case .failure(let e): return e == .wouldBlock
        }
    }

    /// Reads every pending wake-up; stops at EAGAIN (empty).
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while case .success(let n) = retryOnInterrupt({ read(readFD, &buffer, buffer.count) }), n > 0 {}
    }

    /// Waits up to `milliseconds` for a wake-up (or forever when negative); true if woken.
    @discardableResult
    public func wait(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        let r = retryOnInterrupt { poll(&entry, 1, milliseconds) }
        drain()
        if case .success(let n) = r { return n > 0 }
        return false
    }

    /// Waits in one poll(2) for a wake-up or for `events` on `descriptors`, until `deadline` (nil: no
    /// bound); an interrupted poll (EINTR) is resumed with the time left. Drains the wake-ups.
    public func pollDescriptors(_ descriptors: [PollRequest], until deadline: MonotonicInstant?) throws(SystemError) -> PollOutcome {
        var entries = [pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)]
        entries += descriptors.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let ms = deadline.milliseconds(since: .now())
                timeout = ms <= 0 ? 0 : Int32(min(ms.rounded(.up), Double(Int32.max)))
            }
            let n = Glibc.poll(&entries, nfds_t(entries.count), timeout)
            if n >= 0 { break }
            let e = Errno.current
            guard e == .interrupted else {
                throw SystemError("poll", descriptors.map { "fd \($0.fd)" }.joined(separator: ", "), e)
            }
            for i in entries.indices { entries[i].revents = 0 }
        }
        let woken = entries[0].revents != 0
        if woken { drain() }
        return PollOutcome(woken: woken, revents: entries.dropFirst().map(\.revents))
    }
}

/// One descriptor and the events (POLLIN, POLLOUT) to wait for on it.
public struct PollRequest: Equatable, Sendable {
    public var fd: Int32
    public var events: Int16
    public init(fd: Int32, events: Int16) { self.fd = fd; self.events = events }
}

/// What a poll with a wake-up saw.
public struct PollOutcome: Equatable, Sendable {
    /// The wake-up was signalled (a message, a stop, a poke).
    public var woken: Bool
    /// The revents of each requested descriptor, in order (0: nothing; all 0 when the deadline passed).
    public var revents: [Int16]
    public init(woken: Bool, revents: [Int16]) { self.woken = woken; self.revents = revents }

    public var timedOut: Bool { !woken && revents.allSatisfy { $0 == 0 } }
}

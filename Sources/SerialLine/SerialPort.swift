#if canImport(Glibc)
import Glibc
#endif
import Platform
import Settings

/// How a serial line is set up: speed, character format, flow control, RS-485 direction control.
public struct SerialLineConfig: Equatable, Sendable {
    public var baud: SerialBaudRate
    public var format: SerialLineFormat
    /// Hardware flow control (CRTSCTS).
    public var rtscts: Bool
    /// RS-485 mode of the UART (TIOCSRS485, RTS high while sending).
    public var rs485: Bool

    public init(baud: SerialBaudRate, format: SerialLineFormat = .eightNoneOne, rtscts: Bool = false, rs485: Bool = false) {
        self.baud = baud
        self.format = format
        self.rtscts = rtscts
        self.rs485 = rs485
    }
}

extension SerialLineConfig {
    /// The line of the `[serial]` door output.
    public init(_ settings: SerialSettings) {
        self.init(baud: settings.baud, format: settings.format, rtscts: settings.rtscts, rs485: settings.rs485)
    }
}

/// An open, configured serial line: owns the descriptor and closes it exactly once.
/// Used from one queue or thread only, its owner's (public for `scangate doctor`, which opens it once).
public final class SerialPort: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let system: SerialSystemCalls
    private let line: SerialTermios
    private var isOpen = true

    /// How long a poll waits at most before the deadline is looked at again (a shutdown can shorten it).
    private static let pollSliceMilliseconds = 50.0

    private init(path: String, fd: Int32, system: SerialSystemCalls, line: SerialTermios, lock: SerialDeviceLock?,
                 exclusivity: Exclusivity) {
        self.path = path
        self.fd = fd
        self.system = system
        self.line = line
        self.lock = lock
        self.exclusivity = exclusivity
    }

    /// How the port is kept to this process.
    public enum Exclusivity: Equatable, Sendable {
        /// TIOCEXCL and the UUCP lock file at this path.
        case lockFile(String)
        /// TIOCEXCL alone: the lock directory could not be written (why); other programs that follow the
        /// lock-file convention do not see this port as taken.
        case ioctlOnly(String)
        /// A fake device (unit tests).
        case none
    }
    public let exclusivity: Exclusivity
    private let lock: SerialDeviceLock?

    /// Opens `path` non-blocking without making it the controlling terminal, puts it in raw mode with
    /// the configured speed, format and flow control, checks the driver took them, enables RS-485 if
    /// asked, and discards any output still queued from before.
    ///
    /// The port is this process's alone: the UUCP lock file is taken first (SerialDeviceLock; a living holder
    /// is refused with its pid), then, once the device answers as a tty, a tty another process put in
    /// exclusive mode is refused (when there is no lock file to say it is ours: a holder killed while the
    /// tty stayed open leaves the flag set) and TIOCEXCL is set. `close` clears it and removes the lock.
    public static func open(path: String, line config: SerialLineConfig,
                            system: SerialSystemCalls = GlibcSerialSystemCalls()) throws(SystemError) -> SerialPort {
        let lock: SerialDeviceLock?
        let exclusivity: Exclusivity
        switch system.lock(path) {
        case .locked(let taken):
            lock = taken
            exclusivity = .lockFile(taken.path)
        case .heldBy(let pid, let lockPath):
            throw SystemError("open", inUse(path, pid: pid, lockPath: lockPath), .busy)
        case .unavailable(let reason):
            lock = nil
            exclusivity = .ioctlOnly("\(reason)")
        case .noDevice:
            lock = nil
            exclusivity = .none
        }
        let fd: Int32
        do throws(SystemError) {
            fd = try system.open(path, flags: O_RDWR | O_NOCTTY | O_NONBLOCK).get("open", path)
        } catch {
            lock?.release()
            throw error
        }
        let line = SerialTermios(baud: config.baud, format: config.format, rtscts: config.rtscts)
        var madeExclusive = false
        do throws(SystemError) {
            let current = try system.getAttributes(fd).get("tcgetattr", path)
            // TIOCGEXCL is Linux 3.8 and later: a kernel without it cannot tell, and TIOCEXCL still holds.
            if lock == nil, case .success(true) = system.isExclusive(fd) {
                throw SystemError("open", path + " (held exclusively, TIOCEXCL, by another process; "
                                  + "`fuser -v \(path)` names it: stop it first)", .busy)
            }
            try system.setExclusive(fd, true).get("set exclusive mode (TIOCEXCL) on", path)
            madeExclusive = true
            try system.setAttributes(fd, line.apply(to: current)).get("tcsetattr", path)
            // tcsetattr succeeds when any of the changes was taken: read back what the driver did.
            let readBack = try system.getAttributes(fd).get("tcgetattr", path)
            let kept = SerialTermios(reading: readBack)
            if kept != line {
                let keptText = kept.map { "driver kept \($0)" } ?? "driver kept a non-standard speed"
                throw SystemError("set \(line) (\(keptText)) on", path, .invalidArgument)
            }
            if config.rs485 {
                try system.enableRS485(fd).get("enable RS-485 (TIOCSRS485) on", path)
            }
            // Output a previous user left queued must not go out now.
            if case .success(let queued) = system.outputQueueLength(fd), queued > 0 {
                try system.discardOutput(fd).get("tcflush", path)
            }
        } catch {
            if madeExclusive { _ = system.setExclusive(fd, false) }
            _ = system.close(fd)
            lock?.release()
            throw error
        }
        return SerialPort(path: path, fd: fd, system: system, line: line, lock: lock, exclusivity: exclusivity)
    }

    /// "/dev/ttyS0 (in use by pid 1234, lock /run/lock/LCK..ttyS0: stop that process first)".
    public static func inUse(_ path: String, pid: Int32?, lockPath: String) -> String {
        let who = pid.map { "in use by pid \($0)" } ?? "in use: its lock holds no pid; remove it if no program uses the port"
        return "\(path) (\(who), lock \(lockPath)" + (pid == nil ? ")" : ": stop that process first)")
    }

    /// What became of one frame.
    public enum WriteOutcome: Equatable, Sendable {
        /// Written and transmitted (the output queue drained).
        case sent
        /// Not written and transmitted by the deadline: what was still queued was discarded.
        case timedOut(written: Int)
        /// The device went away (ENODEV, EIO, hang-up): close and reopen.
        case lost(Errno, written: Int)
        /// Any other error.
        case failed(Errno, written: Int)
    }

    /// Writes `frame` without blocking, waiting for room with poll(POLLOUT), then waits until the
    /// driver has transmitted it. `deadline` is asked again on every wait, so a shutdown can shorten it.
    /// At the deadline whatever is still queued is discarded (tcflush), so nothing leaves the port late.
    public func write(_ frame: [UInt8], deadline: () -> MonotonicInstant, now: () -> MonotonicInstant) -> WriteOutcome {
        var offset = 0
        while offset < frame.count {
            let result = frame.withUnsafeBytes { raw in
                system.write(fd, UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            switch result {
            case .success(let n):
                offset += n
            case .failure(let e) where e == .wouldBlock:
                let remaining = deadline().milliseconds(since: now())
                guard remaining > 0 else { return abandon(written: offset) }
                let slice = Int32(min(remaining, SerialPort.pollSliceMilliseconds).rounded(.up))
                switch system.poll(fd, events: Int16(POLLOUT), timeoutMilliseconds: slice) {
                case .success(let revents):
                    if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return .lost(.ioError, written: offset) }
                case .failure(let e):
                    return classify(e, written: offset)
                }
            case .failure(let e):
                return classify(e, written: offset)
            }
        }
        return waitUntilTransmitted(written: offset, deadline: deadline, now: now)
    }

    private func waitUntilTransmitted(written: Int, deadline: () -> MonotonicInstant,
                                      now: () -> MonotonicInstant) -> WriteOutcome {
        while true {
            switch system.outputQueueLength(fd) {
            case .success(let queued) where queued <= 0:
                return .sent
            case .success(let queued):
                let remaining = deadline().milliseconds(since: now())
                guard remaining > 0 else { return abandon(written: written) }
                // The time the queued characters take on the wire, at least 1 ms.
                let wire = Double(queued * line.format.bitsPerCharacter) * 1000 / Double(line.baud.bitsPerSecond)
                sleepThread(milliseconds: min(remaining, SerialPort.pollSliceMilliseconds, max(1, wire)))
            case .failure(let e) where e.rawValue == ENOTTY || e == .invalidArgument:
                return .sent  // the driver cannot tell (TIOCOUTQ unsupported): written is all we know
            case .failure(let e):
                return classify(e, written: written)
            }
        }
    }

    private func abandon(written: Int) -> WriteOutcome {
        _ = system.discardOutput(fd)
        return .timedOut(written: written)
    }

    private func classify(_ e: Errno, written: Int) -> WriteOutcome {
        e.meansDeviceGone || e.rawValue == EPIPE ? .lost(e, written: written) : .failed(e, written: written)
    }

    /// Closes the descriptor. Output the driver still holds (flow control stopped it) is discarded first:
    /// it must not leave late, and close(2) would otherwise wait for it (up to the driver's closing_wait,
    /// 30 s by default). Only then: on a pseudo-terminal TCOFLUSH also drops what the peer has not read.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        if case .success(let queued) = system.outputQueueLength(fd), queued > 0 {
            _ = system.discardOutput(fd)
        }
        // Cleared before the close: when another descriptor keeps the tty (a pty's other users), the flag
        // would outlive this port and refuse the next open.
        _ = system.setExclusive(fd, false)
        _ = system.close(fd)
        lock?.release()
    }

    /// What one read brought.
    public enum ReadOutcome: Equatable, Sendable {
        /// At least one byte (at most the asked count).
        case bytes([UInt8])
        /// Nothing arrived by the deadline.
        case timedOut
        /// The device went away (ENODEV, EIO, hang-up): close and reopen.
        case lost(Errno)
        /// Any other error.
        case failed(Errno)
    }

    /// Reads what has arrived, up to `maxBytes`, waiting with poll(POLLIN) until something does or
    /// `deadline` passes. `deadline` is asked again on every wait, so a shutdown can shorten it.
    ///
    /// The line is in raw mode with VMIN = VTIME = 0, so read(2) returns 0 (not EAGAIN) when nothing is
    /// waiting. A 0 therefore means "nothing yet", unless poll had just reported the descriptor readable:
    /// readable with nothing to read is a hang-up (a hung-up tty polls readable and reads 0).
    public func read(maxBytes: Int, deadline: () -> MonotonicInstant, now: () -> MonotonicInstant) -> ReadOutcome {
        var buffer = [UInt8](repeating: 0, count: max(1, maxBytes))
        var pollSaidReadable = false
        while true {
            let result = buffer.withUnsafeMutableBytes { system.read(fd, into: $0) }
            switch result {
            case .success(0) where pollSaidReadable:
                return .lost(.ioError)  // hang-up: the other end of a pty closed, or the device went
            case .success(let n) where n > 0:
                return .bytes(Array(buffer[0..<n]))
            case .success, .failure(.wouldBlock):
                let remaining = deadline().milliseconds(since: now())
                guard remaining > 0 else { return .timedOut }
                let slice = Int32(min(remaining, SerialPort.pollSliceMilliseconds).rounded(.up))
                switch system.poll(fd, events: Int16(POLLIN), timeoutMilliseconds: slice) {
                case .success(let revents):
                    if revents & Int16(POLLIN) == 0, revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                        return .lost(.ioError)
                    }
                    pollSaidReadable = revents & Int16(POLLIN) != 0
                case .failure(let e):
                    return e.meansDeviceGone ? .lost(e) : .failed(e)
                }
            case .failure(let e):
                return e.meansDeviceGone ? .lost(e) : .failed(e)
            }
        }
    }

    /// Drops what was received but not read yet (a reply that came after its reader stopped waiting).
    public func discardInput() { _ = system.discardInput(fd) }

    /// The descriptor, for the owner's poll(2) (its worker's `WorkerInbox.poll`), on the thread that
    /// owns the port and closes it.
    public var descriptor: Int32 { fd }

    /// "9600 baud 8N1": the line as the driver kept it (open checks it read back as configured).
    public var lineDescription: String { line.description }

    deinit { close() }
}

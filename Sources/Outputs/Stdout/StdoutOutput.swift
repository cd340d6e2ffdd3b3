import Core
import Dispatch
import Platform
import Settings

/// The record of every read on stdout: one line per read (JSON by default, or zbarcam's text), each in
/// one write(2) so lines reach a pipe at once and never interleave. Diagnostics never go here: they go
/// to stderr through the Logger.
///
/// `report` only formats the line and hands it to a bounded queue; a writer thread of its own writes it.
/// A reader that stops reading (a full pipe) therefore blocks that thread only: decoding goes on, and
/// lines that do not fit the queue are dropped, counted and logged (rate-limited).
public final class StdoutOutput: ReportOutput, HealthReporting {
    public let name = "stdout"
    private let format: OutputFormat
    private let fd: FileDescriptor
    private let logger: Logger
    private let capacity: Int

    private struct State {
        var lines: [[UInt8]] = []
        var head = 0
        var writing = false
        var closing = false
        var dropped: UInt64 = 0
        var droppedSinceLog: UInt64 = 0
        var written: UInt64 = 0
        var writeErrors: UInt64 = 0
        var lastError: String?
        var lastErrorAt: Int64?
    }
    private let state = PosixMutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let drained = DispatchSemaphore(value: 0)
    /// Set once in init.
    private let thread = PosixMutex<PosixThread?>(nil)

    /// nil for `--output none`.
    public static func make(settings: OutputSettings, logger: Logger) -> StdoutOutput? {
        settings.format == .none ? nil : StdoutOutput(settings: settings, logger: logger)
    }

    /// - Parameter capacity: lines that may wait for the writer before new ones are dropped.
    public init(settings: OutputSettings, logger: Logger, fd: FileDescriptor = FileDescriptor(rawValue: 1),
                capacity: Int = 1024) {
        self.format = settings.format
        self.fd = fd
        self.logger = logger
        self.capacity = max(1, capacity)
        var started: PosixThread?
        do {
            started = try PosixThread(name: "scangate-stdout") { [self] in writerLoop() }
        } catch {
            logger.error("stdout: cannot start its writer thread: \(error); lines are written on the decode queue")
        }
        let thread = started
        self.thread.withLock { $0 = thread }
        if thread == nil { state.withLock { $0.closing = true } }
    }

    public func report(_ event: ReadEvent) {
        let line: String?
        switch format {
        case .json: line = EventLine.json(event)
        case .text: line = EventLine.text(event)
        case .none: line = nil
        }
        guard let line else { return }
        let bytes = Array((line + "\n").utf8)
        if thread.withLock({ $0 == nil }) {
            write(bytes)
            return
        }
        let (queued, logDrops) = state.withLock { s -> (Bool, UInt64) in
            guard !s.closing else { return (false, 0) }
            if s.lines.count - s.head >= capacity {
                s.dropped += 1
                s.droppedSinceLog += 1
                return (false, s.droppedSinceLog)
            }
            s.lines.append(bytes)
            return (true, 0)
        }
        if queued {
            wake.signal()
        } else if logDrops > 0 {
            logger.warning("stdout: not being read; \(logDrops) line\(logDrops == 1 ? "" : "s") dropped "
                           + "(the \(capacity) waiting lines are written when the reader reads again)",
                           rateLimitKey: "stdout-full")
        }
    }

    /// Lines dropped because the queue was full.
    public var droppedLines: UInt64 { state.withLock { $0.dropped } }

    public var health: ComponentHealth {
        state.withLock { s in
            let waiting = s.lines.count - s.head
            let stuck = waiting >= capacity
            return ComponentHealth(name: name, state: stuck ? .degraded : .ok,
                                   detail: stuck ? "stdout is not being read (\(waiting) lines waiting)" : "\(format.rawValue) lines",
                                   lastError: s.lastError, lastErrorAt: s.lastErrorAt, sent: s.written,
                                   errors: s.dropped + s.writeErrors)
        }
    }

    /// Writes what waits until `deadline`; lines still waiting then (a reader that does not read) are
    /// dropped and counted in the log.
    public func close(deadline: MonotonicInstant) {
        let first = state.withLock { s -> Bool in
            defer { s.closing = true }
            return !s.closing
        }
        guard first, let writer = thread.withLock({ $0 }) else { return }
        wake.signal()
        let ms = max(0, deadline.milliseconds(since: .now()))
        if drained.wait(timeout: .now() + .milliseconds(Int(ms.rounded(.up)))) == .timedOut {
            let left = state.withLock { $0.lines.count - $0.head }
            logger.warning("stdout: \(left) line\(left == 1 ? "" : "s") not written at exit: stdout is not being read")
            writer.detach()
            return
        }
        writer.join()
    }

    private func writerLoop() {
        while true {
            let next = state.withLock { s -> (line: [UInt8]?, done: Bool) in
                if s.head < s.lines.count {
                    let line = s.lines[s.head]
                    s.head += 1
                    if s.head > 256 && s.head * 2 > s.lines.count {
                        s.lines.removeFirst(s.head)
                        s.head = 0
                    }
                    s.droppedSinceLog = 0
                    return (line, false)
                }
                return (nil, s.closing)
            }
            if let line = next.line {
                write(line)
                continue
            }
            if next.done { break }
            wake.wait()
        }
        drained.signal()
    }

    private func write(_ bytes: [UInt8]) {
        switch fd.writeAll(bytes) {
        case .success:
            state.withLock { $0.written += 1 }
        case .failure(let e):
            state.withLock { s in
                s.writeErrors += 1
                s.lastError = "write failed: \(e)"
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
            logger.error("stdout: write failed: \(e)", rateLimitKey: "stdout-write")
        }
    }
}

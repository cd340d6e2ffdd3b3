import Core
import Platform
import Runtime
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

    private struct Counts {
        var droppedSinceLog: UInt64 = 0
        var written: UInt64 = 0
        var writeErrors: UInt64 = 0
        var lastError: String?
        var lastErrorAt: Int64?
    }
    private let counts = PosixMutex(Counts())
    /// The writer thread; nil when it could not be started (lines are then written on the caller's thread).
    private let writer = PosixMutex<Worker<[UInt8]>?>(nil)

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
        do {
            let worker = try Worker<[UInt8]>(name: "scangate-stdout", capacity: self.capacity, overflow: .refuse) {
                [self] inbox in
                while case .message(let line) = inbox.next() {
                    counts.withLock { $0.droppedSinceLog = 0 }
                    write(line)
                }
            }
            writer.withLock { $0 = worker }
        } catch {
            logger.error("stdout: cannot start its writer thread: \(error); lines are written on the decode queue")
        }
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
        guard let worker = writer.withLock({ $0 }) else {
            write(bytes)
            return
        }
        guard worker.post(bytes) == .full else { return }
        let logDrops = counts.withLock { c -> UInt64 in
            c.droppedSinceLog += 1
            return c.droppedSinceLog
        }
        logger.warning("stdout: not being read; \(logDrops) line\(logDrops == 1 ? "" : "s") dropped "
                       + "(the \(capacity) waiting lines are written when the reader reads again)",
                       rateLimitKey: "stdout-full")
    }

    /// Lines dropped because the queue was full.
    public var droppedLines: UInt64 { writer.withLock { $0 }?.dropped ?? 0 }

    public var health: ComponentHealth {
        let worker = writer.withLock { $0 }
        let waiting = worker?.waiting ?? 0
        let dropped = worker?.dropped ?? 0
        return counts.withLock { c in
            let stuck = waiting >= capacity
            return ComponentHealth(name: name, state: stuck ? .degraded : .ok,
                                   detail: stuck ? "stdout is not being read (\(waiting) lines waiting)" : "\(format.rawValue) lines",
                                   lastError: c.lastError, lastErrorAt: c.lastErrorAt, sent: c.written,
                                   errors: dropped + c.writeErrors)
        }
    }

    /// Writes what waits until `deadline`; lines still waiting then (a reader that does not read) are
    /// dropped and counted in the log.
    public func close(deadline: MonotonicInstant) {
        guard let worker = writer.withLock({ $0 }), !worker.isStopping else { return }
        if !worker.stop(deadline: deadline) {
            let left = worker.waiting
            logger.warning("stdout: \(left) line\(left == 1 ? "" : "s") not written at exit: stdout is not being read")
        }
    }

    private func write(_ bytes: [UInt8]) {
        switch fd.writeAll(bytes) {
        case .success:
            counts.withLock { $0.written += 1 }
        case .failure(let e):
            counts.withLock { s in
                s.writeErrors += 1
                s.lastError = "write failed: \(e)"
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
            logger.error("stdout: write failed: \(e)", rateLimitKey: "stdout-write")
        }
    }
}

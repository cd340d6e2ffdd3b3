import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// A progress line on stderr for long commands: redrawn in place on a terminal, and at most one line
/// every `interval` seconds when stderr is a file or the journal.
final class ProgressLine: Sendable {
    private let isTTY = isatty(2) != 0
    private let interval: Double
    private let last = PosixMutex<Double>(-1e9)

    init(interval: Double = 10) { self.interval = interval }

    func show(_ message: String) {
        if isTTY {
            Logger.writeToStderr("\(message)\u{1B}[K\u{1B}[1A")
            return
        }
        let now = Double(MonotonicInstant.now().nanoseconds) / 1e9
        let due = last.withLock { t in
            guard now - t >= interval else { return false }
            t = now
            return true
        }
        if due { Logger.writeToStderr(message) }
    }

    /// Ends the line on a terminal.
    func finish() { if isTTY { Logger.writeToStderr("") } }
}

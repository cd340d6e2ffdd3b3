import Core
import Platform

/// The lines a Logger wrote, kept for assertions, from any thread; `wait(for:)` returns as soon as the line
/// arrives (or at its deadline).
final class LogCapture: Sendable {
    private let stored = PosixMutex<[String]>([])
    private let arrived = TestEvent()
    /// Minimum seconds between two lines with the same rate-limit key in `logger` (0: keep every repeat).
    let repeatInterval: Double

    init(repeatInterval: Double = 30) { self.repeatInterval = repeatInterval }

    /// A new Logger at debug level into this capture.
    var logger: Logger { logger(level: .debug) }

    func logger(level: LogLevel) -> Logger {
        Logger(level: level, repeatInterval: repeatInterval) { [self] line in append(line) }
    }

    /// Keeps `line` (for a Logger sink made by hand).
    func append(_ line: String) {
        stored.withLock { $0.append(line) }
        arrived.signal()
    }

    var all: [String] { stored.withLock { $0 } }
    var text: String { all.joined(separator: "\n") }
    func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
    func clear() { stored.withLock { $0.removeAll() } }

    /// Waits until a line containing `text` is logged; false when `seconds` pass first.
    @discardableResult
    func wait(for text: String, within seconds: Double = 10) -> Bool {
        waitUntil(seconds, wakingOn: arrived) { contains(text) }
    }
}

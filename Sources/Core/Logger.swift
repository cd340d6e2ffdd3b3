#if canImport(Glibc)
import Glibc
#endif
import Platform

/// Log levels with the sd-daemon priority prefixes journald understands.
public enum LogLevel: Int, Comparable, CaseIterable, Sendable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public init?(name: String) {
        switch name.lowercased() {
        case "error", "err": self = .error
        case "warning", "warn": self = .warning
        case "notice": self = .notice
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .notice: return "notice"
        case .info: return "info"
        case .debug: return "debug"
        }
    }
}

/// Writes `<N>message` lines to stderr (never stdout). Control characters in messages are escaped so a
/// payload can never put a terminal escape sequence into a log. Repeats of the same `key` are rate-limited.
public final class Logger: Sendable {
    private struct State {
        var level: LogLevel
        var lastByKey: [String: (time: UInt64, suppressed: Int)] = [:]
    }
    private let state: PosixMutex<State>
    private let sink: @Sendable (String) -> Void
    /// Minimum seconds between two lines with the same rate-limit key.
    public let repeatInterval: Double

    public init(level: LogLevel = .info, repeatInterval: Double = 30,
                sink: @escaping @Sendable (String) -> Void = Logger.writeToStderr) {
        self.state = PosixMutex(State(level: level))
        self.sink = sink
        self.repeatInterval = repeatInterval
    }

    public var level: LogLevel {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }

    public func isEnabled(_ level: LogLevel) -> Bool { level <= self.level }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, rateLimitKey: String? = nil) {
        guard isEnabled(level) else { return }
        var text = Logger.escapeControls(message())
        if let key = rateLimitKey {
            let now = MonotonicInstant.now().nanoseconds
            let decision: String?? = state.withLock { s in
                if let last = s.lastByKey[key], Double(now - last.time) / 1e9 < repeatInterval {
                    s.lastByKey[key] = (last.time, last.suppressed + 1)
                    return .some(nil)
                }
                let suppressed = s.lastByKey[key]?.suppressed ?? 0
                s.lastByKey[key] = (now, 0)
                return suppressed > 0 ? .some(" (repeated \(suppressed) more times)") : .none
            }
            switch decision {
            case .some(nil): return
            case .some(.some(let suffix)): text += suffix
            case .none: break
            }
        }
        sink("<\(level.rawValue)>\(text)")
    }

    public func error(_ m: @autoclosure () -> String, rateLimitKey: String? = nil) { log(.error, m(), rateLimitKey: rateLimitKey) }
    public func warning(_ m: @autoclosure () -> String, rateLimitKey: String? = nil) { log(.warning, m(), rateLimitKey: rateLimitKey) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }

    /// Escapes control characters (C0, DEL, C1) and backslash as \xNN (and \\), so no escape sequence
    /// reaches a log and an escaped payload cannot be mistaken for another: for untrusted payload text.
    public static func escape(_ text: String) -> String { escape(text, backslash: true) }

    /// Escapes control characters only: every log line goes through this, so no terminal escape
    /// sequence reaches a log even from a message that was put together carelessly. Backslashes are
    /// left alone, so payloads already escaped with `escape` are not escaped twice.
    public static func escapeControls(_ text: String) -> String { escape(text, backslash: false) }

    private static func escape(_ text: String, backslash: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || (backslash && scalar == "\\") {
                if scalar == "\\" { out += "\\\\"; continue }
                let hex = String(v, radix: 16, uppercase: true)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Escapes raw payload bytes for a log line: printable ASCII as is, everything else \xNN.
    public static func escape(bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return escape(text) }
        var out = ""
        for b in bytes {
            if b >= 0x20 && b < 0x7F && b != 0x5C { out.unicodeScalars.append(Unicode.Scalar(b)) }
            else {
                let hex = String(b, radix: 16, uppercase: true)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// One write per line (EINTR and short writes handled by Platform); an error (stderr closed) is dropped:
    /// there is nowhere left to report it.
    @Sendable public static func writeToStderr(_ line: String) {
        _ = FileDescriptor(rawValue: 2).writeAll(Array((line + "\n").utf8))
    }
}


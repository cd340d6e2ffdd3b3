import Core
import Dispatch
import Platform

/// The daemon's journal lines for what it does (issue 5 §3): one info line per reported code, a warning per
/// rejected code and per door output that refused a code, and the status changes (camera lost and
/// controller offline at warning, paused at notice, scanning at info).
/// The `Logger` adds the sd-daemon `<N>` prefixes journald turns into priorities and escapes control
/// characters, so an untrusted payload cannot forge a log line; a payload that is not UTF-8 is logged in
/// hex, and payloads longer than `maxPayload` bytes are cut. Lines are written on the sink's own queue: `handle` never blocks the decode queue.
public final class JournalLogSink: ReportOutput, StatusObserver {
    public let name = "log"
    private let logger: Logger
    private let queue = DispatchQueue(label: "scangate.journal-log")
    public let maxPayload: Int

    public init(logger: Logger, maxPayload: Int = 256) {
        self.logger = logger
        self.maxPayload = maxPayload
    }

    public func report(_ event: ReadEvent) {
        let level: LogLevel = event.verdict.isAccepted && event.refusals.isEmpty ? .info : .warning
        guard logger.isEnabled(level) else { return }
        queue.async { [logger, maxPayload] in
            logger.log(level, Self.line(for: event, maxPayload: maxPayload))
        }
    }

    public func statusChanged(_ status: DaemonStatus) {
        queue.async { [logger] in
            switch status {
            case .cameraLost, .controllerOffline: logger.warning("status: \(status.rawValue)")
            case .paused: logger.notice("status: paused")
            default: logger.info("status: \(status.rawValue)")
            }
        }
    }

    public func close(deadline: MonotonicInstant) { queue.sync {} }

    /// "read #3 QR-Code frame 120 latency 18 ms: HELLO" / "rejected #4 QR-Code frame 130 (reason): ..."
    public static func line(for event: ReadEvent, maxPayload: Int = 256) -> String {
        // The Logger escapes control characters once; a payload that is not UTF-8 is shown in hex.
        let data = event.symbol.data
        let shown = Array(data.prefix(maxPayload))
        var payload: String
        if let text = String(validating: shown, as: UTF8.self) {
            payload = text
        } else {
            payload = "hex:" + Hex.string(shown)
        }
        if data.count > maxPayload { payload += "... (\(data.count) bytes)" }
        let head = "#\(event.seq) \(event.symbol.symbology.zbarName) frame \(event.frame)"
        switch event.verdict {
        case .accepted:
            let latency = Int(event.latencyMilliseconds.rounded())
            var line = "read \(head) latency \(latency) ms: \(payload)"
            if let c = event.credential {
                line += " (\(c.format) pass, number \(c.number), key \(c.keyID)\(c.tokenID.map { ", jti \($0)" } ?? ""))"
            }
            let refusals = event.refusals
            if !refusals.isEmpty {
                line += "; refused by " + refusals.map { "\($0.output) (\($0.reason))" }.joined(separator: ", ")
                if !event.reachedADoorOutput { line += "; no door output took it" }
            }
            return line
        case .rejected(let reason):
            return "rejected \(head) (\(reason)): \(payload)"
        }
    }
}

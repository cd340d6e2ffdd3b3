import Core
import Dispatch
import Platform

/// Tells systemd what the daemon is doing (sd_notify): READY=1 once the camera streams, STATUS= lines
/// for scanning / camera lost / paused, RELOADING=1 around a config reload, WATCHDOG=1 pings (sent by
/// `Watchdog`), STOPPING=1 at shutdown. Outside systemd (no NOTIFY_SOCKET) every call is a cheap no-op.
///
/// As a `StatusObserver` of the daemon's status board: the first `.scanning` status sends READY=1, every
/// status change sends STATUS=, and `close()` sends STOPPING=1. Messages go out on the notifier's own
/// serial queue, in order, so `statusChanged` never blocks the caller.
public final class ServiceNotifier: StatusObserver {
    public let name = "systemd"
    private let calls: any SystemdCalls
    private let logger: Logger
    private let queue = DispatchQueue(label: "scangate.sd-notify")

    private struct State {
        var readySent = false
        var lastStatus: DaemonStatus?
        var closed = false
    }
    private let state = PosixMutex(State())

    public init(calls: any SystemdCalls = LibSystemd(), logger: Logger) {
        self.calls = calls
        self.logger = logger
    }

    /// READY=1 (once per run; again after `reloading()`), with the current status.
    public func ready() {
        let status: DaemonStatus? = state.withLock { s in
            guard !s.readySent, !s.closed else { return nil }
            s.readySent = true
            return s.lastStatus ?? .scanning
        }
        guard let status else { return }
        send("READY=1\nSTATUS=\(Self.statusText(status))")
    }

    /// STATUS=scanning / camera lost / paused. The first `.scanning` also sends READY=1: the camera streams.
    public func status(_ status: DaemonStatus) {
        enum Action { case none, status, readyAndStatus }
        let action: Action = state.withLock { s in
            guard !s.closed, s.lastStatus != status else { return .none }
            s.lastStatus = status
            if status == .scanning && !s.readySent {
                s.readySent = true
                return .readyAndStatus
            }
            return .status
        }
        switch action {
        case .none: return
        case .status: send("STATUS=\(Self.statusText(status))")
        case .readyAndStatus: send("READY=1\nSTATUS=\(Self.statusText(status))")
        }
    }

    /// RELOADING=1 before re-reading the config (SIGHUP); call `ready()` when done.
    public func reloading() {
        let go = state.withLock { s in
            guard !s.closed else { return false }
            s.readySent = false
            return true
        }
        if go { send("RELOADING=1\nSTATUS=reloading configuration") }
    }

    /// One watchdog keep-alive (`Watchdog` decides when).
    public func watchdogPing() {
        if !state.withLock({ $0.closed }) { send("WATCHDOG=1") }
    }

    /// STOPPING=1: the daemon is shutting down. Nothing is sent after it.
    public func stopping() {
        let go = state.withLock { s in
            guard !s.closed else { return false }
            s.closed = true
            return true
        }
        if go { send("STOPPING=1\nSTATUS=stopping") }
    }

    /// Waits until every message queued so far has been handed to systemd.
    public func flush() { queue.sync {} }

    // MARK: StatusObserver

    public func statusChanged(_ status: DaemonStatus) { self.status(status) }

    /// STOPPING=1, and waits until it is sent.
    public func close() {
        stopping()
        flush()
    }

    // MARK: -

    /// The STATUS= text: "scanning", "camera lost", "paused", ...
    public static func statusText(_ status: DaemonStatus) -> String { status.rawValue }

    private func send(_ message: String) {
        queue.async { [calls, logger] in
            if case .failure(let error) = calls.notify(message) {
                let what = message.split(separator: "\n").first.map(String.init) ?? message
                logger.warning("sd_notify \(what): \(error)", rateLimitKey: "sd_notify")
            }
        }
    }
}

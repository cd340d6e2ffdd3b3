import Platform

/// What the capture side is doing: set by the pipeline and the daemon.
public enum CaptureState: String, Sendable, Equatable {
    case starting, scanning, cameraLost = "camera lost", paused, stopping
}

/// The daemon's one status, from what the capture side does and from the controller links the door
/// outputs report. Lives for the daemon's whole run (across reloads); each change is logged once and
/// handed to the observers (status LED, sd_notify, watchdog, MQTT state) in the order they were given.
///
/// Precedence: stopping, paused and camera lost come from the capture side and win; a scanning reader
/// whose controller is away is `controller offline`.
public final class StatusBoard: ControllerLinkObserver, @unchecked Sendable {
    public struct Link: Equatable, Sendable {
        public var online: Bool
        public var detail: String
        /// Wall-clock nanoseconds of the last change.
        public var since: Int64
    }

    private struct State {
        var capture: CaptureState = .starting
        var links: [String: Link] = [:]
        var status: DaemonStatus = .starting
        var observers: [any StatusObserver] = []
    }
    private let state = PosixMutex(State())
    private let logger: Logger
    /// Serialises the observer calls so they see the changes in order.
    private let delivery = PosixMutex(())

    public init(logger: Logger, observers: [any StatusObserver] = []) {
        self.logger = logger
        state.withLock { $0.observers = observers }
    }

    public func addObserver(_ observer: any StatusObserver) {
        let current = state.withLock { s in
            s.observers.append(observer)
            return s.status
        }
        observer.statusChanged(current)
    }

    public var status: DaemonStatus { state.withLock { $0.status } }
    public var capture: CaptureState { state.withLock { $0.capture } }
    /// Each controller link by output name.
    public var links: [String: Link] { state.withLock { $0.links } }

    public func setCapture(_ capture: CaptureState) {
        update { $0.capture = capture }
    }

    public func controllerLink(_ output: String, online: Bool, detail: String) {
        let changed = state.withLock { s -> Bool in
            if let old = s.links[output], old.online == online { return false }
            s.links[output] = Link(online: online, detail: detail, since: WallClock.nowNanoseconds())
            return true
        }
        guard changed else { return }
        if online {
            logger.notice("controller online: \(output): \(detail)")
        } else {
            logger.warning("controller offline: \(output): \(detail)")
        }
        update { _ in }
    }

    /// Forgets an output's link (the output was removed by a reload).
    public func removeLink(_ output: String) {
        let removed = state.withLock { $0.links.removeValue(forKey: output) != nil }
        if removed { update { _ in } }
    }

    private func update(_ change: (inout State) -> Void) {
        delivery.withLock { _ in
            let (new, observers) = state.withLock { s -> (DaemonStatus?, [any StatusObserver]) in
                change(&s)
                let computed = Self.combine(s.capture, s.links.values.contains { !$0.online })
                guard computed != s.status else { return (nil, []) }
                s.status = computed
                return (computed, s.observers)
            }
            guard let new else { return }
            for o in observers { o.statusChanged(new) }
        }
    }

    static func combine(_ capture: CaptureState, _ controllerAway: Bool) -> DaemonStatus {
        switch capture {
        case .starting: return .starting
        case .stopping: return .stopping
        case .paused: return .paused
        case .cameraLost: return .cameraLost
        case .scanning: return controllerAway ? .controllerOffline : .scanning
        }
    }
}

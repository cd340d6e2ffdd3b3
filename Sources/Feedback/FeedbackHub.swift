import Core
import Platform
import Settings

/// The one door into feedback. Every source hands its requests here: the read (through
/// `readJudged`), and the door controller (OSDP, Wiegand inputs, a serial reply, MQTT: `play`). The hub
/// fans them out to the feedback devices (GPIO LEDs and buzzer, the ALSA beep), each of which resolves
/// grant, deny and the read cue from its own settings.
///
/// The hub lives for the daemon's whole run: outputs keep a reference to it across reloads, while a
/// reload swaps only the devices whose settings changed (`install`).
public final class FeedbackHub: FeedbackSink, ReadFeedback, StatusObserver, @unchecked Sendable {
    private struct State {
        var settings: FeedbackSettings
        var devices: [(slot: String, device: any FeedbackDevice)] = []
        var status: DaemonStatus?
        /// What a door controller holds now (a permanent LED state, a tone until replaced): played to a
        /// device installed later (a reload that rebuilt it), so the reader does not forget it.
        var held = FeedbackCommand()
        var closed = false
    }
    private let state: PosixMutex<State>
    private let logger: Logger

    public init(settings: FeedbackSettings, logger: Logger) {
        self.state = PosixMutex(State(settings: settings))
        self.logger = logger
    }

    public var settings: FeedbackSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The devices now installed, by slot.
    public var devices: [(slot: String, device: any FeedbackDevice)] { state.withLock { $0.devices } }

    /// Puts `device` in `slot` (nil: empties it). The device it replaces is closed (by `deadline`);
    /// the new one is told the current status.
    public func install(_ device: (any FeedbackDevice)?, slot: String,
                        closingOldBy deadline: MonotonicInstant = .now().adding(milliseconds: 2000)) {
        let (old, status, held) = state.withLock { s -> ((any FeedbackDevice)?, DaemonStatus?, FeedbackCommand) in
            let old = s.devices.first { $0.slot == slot }?.device
            s.devices.removeAll { $0.slot == slot }
            if let device, !s.closed { s.devices.append((slot, device)) }
            return (old, s.status, s.held)
        }
        old?.close(deadline: deadline)
        if let status, let observer = device as? StatusObserver { observer.statusChanged(status) }
        if let device, held != FeedbackCommand() { device.play(.command(held)) }
    }

    /// What a controller holds now (see `State.held`).
    public var held: FeedbackCommand { state.withLock { $0.held } }

    public func play(_ request: FeedbackRequest, origin: String) {
        let devices = state.withLock { s -> [any FeedbackDevice] in
            if case .command(let c) = request { s.held.hold(c) }
            return s.closed ? [] : s.devices.map(\.device)
        }
        if logger.isEnabled(.debug) { logger.debug("feedback from \(origin): \(Self.describe(request))") }
        for d in devices { d.play(request) }
    }

    /// The feedback for one read after the policies and the door outputs judged it:
    /// - refused by a policy (a filter, a bad pass), or taken by none of the configured door outputs: deny;
    /// - otherwise `feedback = local`: grant; `feedback = controller`: the read cue (if on), and the
    ///   controller's answer decides.
    public func readJudged(_ event: ReadEvent, doorOutputs: Int) {
        let settings = self.settings
        let request: FeedbackRequest?
        if !event.verdict.isAccepted || (doorOutputs > 0 && !event.reachedADoorOutput) {
            request = .deny
        } else if settings.master == .controller {
            request = settings.readCue ? .readCue : nil
        } else {
            request = .grant
        }
        if let request { play(request, origin: "read") }
    }

    public func statusChanged(_ status: DaemonStatus) {
        let devices = state.withLock { s -> [any FeedbackDevice] in
            s.status = status
            return s.devices.map(\.device)
        }
        for case let observer as StatusObserver in devices { observer.statusChanged(status) }
    }

    /// Lets what plays finish (a good-read flash, a beep), until `deadline` at the latest.
    public func waitUntilIdle(deadline: MonotonicInstant) {
        for d in devices.map(\.device) { _ = d.waitUntilIdle(deadline: deadline) }
    }

    /// Drives every device's lines inactive at once (shutdown out of time).
    public func forceInactive() {
        for case let holder as LineHolder in devices.map(\.device) { holder.forceInactive() }
    }

    /// Closes every device (lines inactive, devices released) by `deadline`; later requests are ignored.
    public func close(deadline: MonotonicInstant) {
        let devices = state.withLock { s -> [any FeedbackDevice] in
            s.closed = true
            defer { s.devices.removeAll() }
            return s.devices.map(\.device)
        }
        for d in devices { d.close(deadline: deadline) }
    }

    static func describe(_ request: FeedbackRequest) -> String {
        switch request {
        case .grant: return "grant"
        case .deny: return "deny"
        case .readCue: return "read cue"
        case .command(let c):
            var parts: [String] = []
            if let led = c.led {
                if let p = led.permanent { parts.append("LED permanent \(describe(p))") }
                switch led.temporary {
                case .show(let b, let d)?: parts.append("LED \(describe(b)) for \(describe(d))")
                case .cancel?: parts.append("LED temporary cancelled")
                case nil: break
                }
            }
            if let t = c.tone {
                parts.append(t.isSilence ? "tone off" : "tone \(t.onMs)/\(t.offMs) ms for \(describe(t.duration))")
            }
            return parts.isEmpty ? "no change" : parts.joined(separator: ", ")
        }
    }

    private static func describe(_ b: LEDBlink) -> String {
        b.offMs == 0 ? b.onColor.rawValue : "\(b.onColor.rawValue) \(b.onMs) ms / \(b.offColor.rawValue) \(b.offMs) ms"
    }

    private static func describe(_ d: FeedbackDuration) -> String {
        switch d {
        case .cycles(let n): return "\(n) cycle\(n == 1 ? "" : "s")"
        case .milliseconds(let ms): return "\(ms) ms"
        case .untilReplaced: return "until replaced"
        }
    }
}

extension FeedbackCommand {
    /// Folds a later command into what is held: its permanent LED state replaces the held one; its tone
    /// is held while it lasts until replaced, and a bounded tone or silence ends the held one.
    mutating func hold(_ later: FeedbackCommand) {
        if let permanent = later.led?.permanent {
            led = permanent == .steady(.off) ? nil : LEDCommand(permanent: permanent)
        }
        if let t = later.tone { tone = t.duration == .untilReplaced && !t.isSilence ? t : nil }
    }
}

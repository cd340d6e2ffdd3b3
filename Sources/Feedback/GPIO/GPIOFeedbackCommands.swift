import Core
import Settings

/// What the GPIO lines play, built from the `[gpio]` settings:
/// - grant (good read): green on `good-led-ms`, one `good-buzz-ms` buzz at the start;
/// - deny (rejected code): `error-blinks` red blinks of `error-blink-ms` on / `error-blink-ms` off, each
///   starting with an `error-buzz-ms` buzz;
/// - read cue (`feedback = controller`): one `cue-buzz-ms` buzz, the LED left to the controller;
/// - status LED: scanning = `heartbeat-ms` on every `heartbeat-period-ms`; camera lost = on/off
///   `camera-lost-blink-ms` each; controller offline = on/off `controller-offline-blink-ms` each;
///   paused, starting and stopping = off.
public struct GPIOFeedbackCommands: Equatable, Sendable {
    public var grant: FeedbackCommand
    public var deny: FeedbackCommand
    public var readCue: FeedbackCommand
    public var scanning: StatusBlink
    public var cameraLost: StatusBlink
    public var controllerOffline: StatusBlink

    public init(settings s: GPIOSettings) {
        grant = FeedbackCommand(
            led: LEDCommand(temporary: s.goodLedMs > 0
                ? .show(LEDBlink(onColor: .green, onMs: s.goodLedMs, offMs: 0), for: .milliseconds(s.goodLedMs))
                : .cancel),
            tone: s.goodBuzzMs > 0 ? ToneCommand(onMs: s.goodBuzzMs, offMs: 0, duration: .cycles(1)) : .silence)
        let blink = max(1, s.errorBlinkMs)
        let buzz = min(s.errorBuzzMs, blink)
        deny = FeedbackCommand(
            led: LEDCommand(temporary: s.errorBlinks > 0
                ? .show(LEDBlink(onColor: .red, offColor: .off, onMs: blink, offMs: blink), for: .cycles(s.errorBlinks))
                : .cancel),
            tone: s.errorBlinks > 0 && buzz > 0
                ? ToneCommand(onMs: buzz, offMs: 2 * blink - buzz, duration: .cycles(s.errorBlinks)) : .silence)
        readCue = FeedbackCommand(
            tone: s.cueBuzzMs > 0 ? ToneCommand(onMs: s.cueBuzzMs, offMs: 0, duration: .cycles(1)) : .silence)
        let period = max(2, s.heartbeatPeriodMs)
        let on = min(s.heartbeatMs, period - 1)
        scanning = StatusBlink(onMs: on, offMs: period - on)
        let fast = max(1, s.cameraLostBlinkMs)
        cameraLost = StatusBlink(onMs: fast, offMs: fast)
        let slow = max(1, s.controllerOfflineBlinkMs)
        controllerOffline = StatusBlink(onMs: slow, offMs: slow)
    }

    public func command(for request: FeedbackRequest) -> FeedbackCommand {
        switch request {
        case .grant: return grant
        case .deny: return deny
        case .readCue: return readCue
        case .command(let c): return c
        }
    }

    public func status(_ status: DaemonStatus) -> StatusBlink {
        switch status {
        case .scanning: return scanning
        case .cameraLost: return cameraLost
        case .controllerOffline: return controllerOffline
        case .paused, .starting, .stopping: return .off
        }
    }
}

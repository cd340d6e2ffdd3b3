import Platform

/// The feedback seam. LEDs, the buzzer and the ALSA beep play `FeedbackCommand`s. The commands come
/// from the read itself (`feedback = local`: grant or deny for each read) or from the door controller
/// (`feedback = controller`: OSDP LED and BUZ commands, the Wiegand LED and beeper inputs, a serial
/// reply, an MQTT command). Every source hands its requests to one `FeedbackSink`.
public protocol FeedbackSink: AnyObject, Sendable {
    /// Plays `request` now, replacing what it overrides. `origin` names the source for logs ("read",
    /// "osdp", "wiegand", "serial", "mqtt"). Never blocks; safe from any thread.
    func play(_ request: FeedbackRequest, origin: String)
}

/// What a feedback source asks for.
public enum FeedbackRequest: Equatable, Sendable {
    /// The grant pattern (the good-read pattern of the `[gpio]` and `[beep]` settings).
    case grant
    /// The deny pattern (the error pattern).
    case deny
    /// The short cue that says "read" while the controller decides (`feedback-read-cue`).
    case readCue
    /// An explicit command: a controller's LED and buzzer settings.
    case command(FeedbackCommand)
}

/// The reader's two-colour LED (the green and red GPIO lines; amber is both lit).
public enum LEDColor: String, CaseIterable, Equatable, Sendable {
    case off, red, green, amber

    public var lightsGreen: Bool { self == .green || self == .amber }
    public var lightsRed: Bool { self == .red || self == .amber }
}

/// A light that alternates: `onColor` for `onMs`, then `offColor` for `offMs`, and again.
/// `offMs == 0` (or `onMs == 0`) is a steady light of one colour.
public struct LEDBlink: Equatable, Sendable {
    public var onColor: LEDColor
    public var offColor: LEDColor
    public var onMs: Int
    public var offMs: Int

    public init(onColor: LEDColor, offColor: LEDColor = .off, onMs: Int, offMs: Int) {
        self.onColor = onColor
        self.offColor = offColor
        self.onMs = max(0, onMs)
        self.offMs = max(0, offMs)
    }

    /// One colour, not blinking.
    public static func steady(_ color: LEDColor) -> LEDBlink { LEDBlink(onColor: color, onMs: 1, offMs: 0) }

    /// The colour `elapsedMs` after the blink started.
    public func color(atElapsed elapsedMs: Int) -> LEDColor {
        if offMs == 0 { return onColor }
        if onMs == 0 { return offColor }
        return elapsedMs % (onMs + offMs) < onMs ? onColor : offColor
    }
}

/// How long a temporary LED state or a tone lasts.
public enum FeedbackDuration: Equatable, Sendable {
    /// This many on/off cycles.
    case cycles(Int)
    /// This long (OSDP's LED timer).
    case milliseconds(Int)
    /// Until the next command replaces it (a Wiegand input held low, OSDP BUZ with count 0).
    case untilReplaced
}

/// A command for the LED, after OSDP's osdp_LED: a permanent state, and a temporary state shown over
/// it for a while, after which the permanent state comes back.
public struct LEDCommand: Equatable, Sendable {
    public enum Temporary: Equatable, Sendable {
        /// Shows `blink` for `duration`, then the permanent state again.
        case show(LEDBlink, for: FeedbackDuration)
        /// Ends the temporary state now.
        case cancel
    }

    /// nil: the temporary state is left as it is.
    public var temporary: Temporary?
    /// nil: the permanent state is left as it is.
    public var permanent: LEDBlink?

    public init(temporary: Temporary? = nil, permanent: LEDBlink? = nil) {
        self.temporary = temporary
        self.permanent = permanent
    }
}

/// A command for the buzzer line and the beep, after OSDP's osdp_BUZ: on for `onMs`, off for `offMs`,
/// for `duration`. `ToneCommand.silence` stops a tone in progress.
public struct ToneCommand: Equatable, Sendable {
    public var onMs: Int
    public var offMs: Int
    public var duration: FeedbackDuration

    public init(onMs: Int, offMs: Int, duration: FeedbackDuration) {
        self.onMs = max(0, onMs)
        self.offMs = max(0, offMs)
        self.duration = duration
    }

    /// No tone: stops the one in progress.
    public static let silence = ToneCommand(onMs: 0, offMs: 0, duration: .cycles(0))

    public var isSilence: Bool {
        onMs == 0 || duration == .cycles(0) || duration == .milliseconds(0)
    }
}

/// A controller's feedback command: the LED and the tone; either may be absent (left as it is).
public struct FeedbackCommand: Equatable, Sendable {
    public var led: LEDCommand?
    public var tone: ToneCommand?

    public init(led: LEDCommand? = nil, tone: ToneCommand? = nil) {
        self.led = led
        self.tone = tone
    }
}

/// A device that plays feedback: the GPIO LEDs and buzzer, the ALSA beep. The daemon builds each from
/// its own settings section and rebuilds it only when those change; the feedback hub fans requests out.
public protocol FeedbackDevice: AnyObject, Sendable {
    /// "gpio", "beep": for logs.
    var name: String { get }
    /// Plays `request`, resolving grant, deny and the read cue from the device's own settings. Never blocks.
    func play(_ request: FeedbackRequest)
    /// Blocks until what plays now has finished, or `deadline`; true when idle. Used before an exit the
    /// daemon chose itself (end of a replay, --oneshot), so a good-read flash is not cut short.
    func waitUntilIdle(deadline: MonotonicInstant) -> Bool
    /// Stops at once, drives every line inactive and releases the device, returning by `deadline`.
    func close(deadline: MonotonicInstant)
}

/// Who decides what the LEDs, the buzzer and the beep show for a read (the `[feedback]` section).
public struct FeedbackSettings: SettingsSection {
    public enum Master: String, CaseIterable, Sendable {
        /// The read itself: grant for an accepted code, deny for a refused one (the default).
        case local
        /// The door controller: a read plays only the short read cue; grant and deny come from the
        /// controller's commands (OSDP LED/BUZ, the Wiegand LED and beeper inputs, a serial reply, MQTT).
        case controller
    }

    public var master: Master = .local
    /// `feedback = controller`: play the read cue on each read (`feedback-read-cue`).
    public var readCue = true

    public init() {}
}

extension RunSettings {
    public var feedback: FeedbackSettings {
        get { self[FeedbackSettings.self] }
        set { self[FeedbackSettings.self] = newValue }
    }
}

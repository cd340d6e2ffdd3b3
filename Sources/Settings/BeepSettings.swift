import Core

/// What the user chose for the ALSA beep (the `[beep]` section). Settings only: the open PCM and the
/// retry state live in `BeepSink`.
public struct BeepSettings: SettingsSection {
    /// Played for an accepted read; nil: no beep at all (the beep feedback is not created).
    public var good: BeepPattern? = nil
    /// Played for a rejected read; nil: rejected reads are silent.
    public var error: BeepPattern? = BeepPattern.defaultError
    /// `feedback = controller`: the short beep that says "read" while the controller decides (nil: silent).
    public var cue: BeepPattern? = BeepPattern.defaultCue
    /// The pitch of tone commands from a door controller (OSDP BUZ, the Wiegand beeper input, MQTT).
    public var toneHertz: Int = 2000
    /// ALSA PCM name: `default`, `hw:1,0`, `plughw:CARD=Headphones`, `hw:Loopback,0,0`, ...
    public var device: String = "default"
    /// Linear amplitude, 0...1 of full scale.
    public var volume: Double = 0.5

    public init() {}

    /// True when `--beep` was given.
    public var enabled: Bool { good != nil }


}

extension RunSettings {
    public var beep: BeepSettings {
        get { self[BeepSettings.self] }
        set { self[BeepSettings.self] = newValue }
    }
}

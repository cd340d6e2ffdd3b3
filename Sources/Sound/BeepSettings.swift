import Core

/// What the user chose for the ALSA beep (the `[beep]` section). Settings only: the open PCM and the
/// retry state live in `BeepSink`.
public struct BeepSettings: Equatable, Sendable {
    /// Played for an accepted read; nil: no beep at all (the sink is not created).
    public var good: BeepPattern? = nil
    /// Played for a rejected read; nil: rejected reads are silent.
    public var error: BeepPattern? = BeepPattern.defaultError
    /// ALSA PCM name: `default`, `hw:1,0`, `plughw:CARD=Headphones`, `hw:Loopback,0,0`, ...
    public var device: String = "default"
    /// Linear amplitude, 0...1 of full scale.
    public var volume: Double = 0.5

    public init() {}

    /// True when `--beep` was given.
    public var enabled: Bool { good != nil }

    /// The pattern for an event's verdict (nil: stay silent).
    public func pattern(for verdict: Verdict) -> BeepPattern? {
        verdict.isAccepted ? good : error
    }
}

import Core
import Debounce
import Decoding
import GPIO
import Outputs
import Pipeline
import Serial
import Sound

/// Everything `scangate run` can be told, from flags and the config file. Settings only: the runtime
/// state of each stage lives in that stage's types.
public struct RunSettings: Equatable, Sendable {
    public var capture = CaptureSettings()
    public var decoder = DecoderSettings()
    public var debounce = DebounceSettings()
    public var filter = FilterSettings()
    public var output = OutputSettings()
    public var serial = SerialSettings()
    public var gpio = GPIOSettings()
    public var beep = BeepSettings()
    /// Exit 0 after the first reported code.
    public var oneshot = false
    public var logLevel: LogLevel = .info

    public init() {}
}

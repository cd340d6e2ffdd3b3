import Core
import Settings

/// One of doctor's own switches, registered by the component that acts on it (`--test-frame` by the
/// serial output).
public struct DoctorFlag: Equatable, Sendable {
    /// Without the dashes: "test-frame".
    public let name: String
    public let help: String
    /// Whether the device the switch tests is configured; a switch for a device that is not is a failure.
    public let isConfigured: @Sendable (RunSettings) -> Bool
    /// How to configure that device, for the failure's fix: "set serial = /dev/ttyUSB0 in [serial]".
    public let howToConfigure: String

    public init(_ name: String, help: String, howToConfigure: String,
                isConfigured: @escaping @Sendable (RunSettings) -> Bool) {
        self.name = name
        self.help = help
        self.howToConfigure = howToConfigure
        self.isConfigured = isConfigured
    }

    public static func == (a: DoctorFlag, b: DoctorFlag) -> Bool { a.name == b.name && a.help == b.help }
}

/// What `scangate doctor` itself is asked to do, beyond the `run` settings it probes.
public struct DoctorOptions: Equatable, Sendable {
    /// The switches given (without dashes), from the components' `DoctorFlag`s.
    public var switches: Set<String> = []
    /// `--blink`: drive each configured LED and the buzzer active once, then inactive.
    public var blink: Bool {
        get { switches.contains("blink") }
        set { set("blink", newValue) }
    }
    /// `--test-beep`: play the good-read pattern on the beep device.
    public var testBeep: Bool {
        get { switches.contains("test-beep") }
        set { set("test-beep", newValue) }
    }
    /// `--test-frame`: write one frame with the payload `testPayload` to the serial port.
    public var testFrame: Bool {
        get { switches.contains("test-frame") }
        set { set("test-frame", newValue) }
    }

    public mutating func set(_ name: String, _ on: Bool) {
        if on { switches.insert(name) } else { switches.remove(name) }
    }
    /// `--capture-seconds N`: how long to grab camera frames (a finite source may end sooner).
    public var captureSeconds: Double = 2
    /// How long each line stays active with `--blink`.
    public var blinkMilliseconds: Double = 300

    public static let testPayload = "SCANGATE-TEST"
    public static let captureSecondsRange: ClosedRange<Double> = 0.1...60

    public init() {}

    /// Takes doctor's own flags (`--capture-seconds` and the components' `flags`) out of `arguments`; the
    /// rest are `run` flags (and --config, --help).
    public static func extract(_ arguments: [String], flags: [DoctorFlag]) throws(UsageError) -> (DoctorOptions, [String]) {
        let names = Set(flags.map(\.name))
        var options = DoctorOptions()
        var rest: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if arg.hasPrefix("--"), names.contains(String(arg.dropFirst(2))) {
                options.switches.insert(String(arg.dropFirst(2)))
                continue
            }
            switch arg {
            case "--capture-seconds":
                guard i < arguments.count else { throw UsageError("--capture-seconds needs a value (N seconds)") }
                options.captureSeconds = try seconds(arguments[i])
                i += 1
            default:
                if arg.hasPrefix("--capture-seconds=") {
                    options.captureSeconds = try seconds(String(arg.dropFirst("--capture-seconds=".count)))
                } else {
                    rest.append(arg)
                }
            }
        }
        return (options, rest)
    }

    private static func seconds(_ text: String) throws(UsageError) -> Double {
        guard let value = Double(text), value.isFinite, captureSecondsRange.contains(value) else {
            throw UsageError("--capture-seconds: '\(text)' is not a number of seconds from "
                             + "\(captureSecondsRange.lowerBound) to \(Int(captureSecondsRange.upperBound))")
        }
        return value
    }
}

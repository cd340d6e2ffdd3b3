import Core

/// What `scangate doctor` itself is asked to do, beyond the `run` settings it probes.
public struct DoctorOptions: Equatable, Sendable {
    /// `--blink`: drive each configured LED and the buzzer active once, then inactive.
    public var blink = false
    /// `--test-beep`: play the good-read pattern on the beep device.
    public var testBeep = false
    /// `--test-frame`: write one frame with the payload `testPayload` to the serial port.
    public var testFrame = false
    /// `--capture-seconds N`: how long to grab camera frames (a finite source may end sooner).
    public var captureSeconds: Double = 2
    /// How long each line stays active with `--blink`.
    public var blinkMilliseconds: Double = 300

    public static let testPayload = "SCANGATE-TEST"
    public static let captureSecondsRange: ClosedRange<Double> = 0.1...60

    public init() {}

    /// Takes doctor's own flags out of `arguments`; the rest are `run` flags (and --config, --help).
    public static func extract(_ arguments: [String]) throws(UsageError) -> (DoctorOptions, [String]) {
        var options = DoctorOptions()
        var rest: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            switch arg {
            case "--blink": options.blink = true
            case "--test-beep": options.testBeep = true
            case "--test-frame": options.testFrame = true
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

import Core

/// A Wiegand setting that cannot be used: names the option and says what is allowed.
public struct WiegandSettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    public let option: String
    public let message: String
    public init(option: String, _ message: String) {
        self.option = option
        self.message = message
    }
    public var description: String { message }
}

/// What the user chose for the Wiegand output (the `[wiegand]` options). Defaults are written here once;
/// `validate()` refuses what cannot work, naming the option and the allowed values. Runtime state (the
/// line request, the queue, the inputs) lives in `WiegandOutput`, never here.
public struct WiegandSettings: SettingsSection {
    /// The option names, as the options table and error messages spell them.
    public enum Option {
        public static let chip = "wiegand-chip"
        public static let d0 = "wiegand-d0"
        public static let d1 = "wiegand-d1"
        public static let format = "wiegand-format"
        public static let map = "wiegand-map"
        public static let facility = "wiegand-facility"
        public static let overRange = "wiegand-over-range"
        public static let pulseUs = "wiegand-pulse-us"
        public static let intervalUs = "wiegand-interval-us"
        public static let frameGapMs = "wiegand-frame-gap-ms"
        public static let activeHigh = "wiegand-active-high"
        public static let ledInput = "wiegand-led-input"
        public static let beeperInput = "wiegand-beeper-input"
        public static let inputActiveHigh = "wiegand-input-active-high"
        /// Every option `apply(option:value:)` takes except the chip (which is `--gpio-chip`'s).
        public static let all = [d0, d1, format, map, facility, overRange, pulseUs, intervalUs, frameGapMs,
                                 activeHigh, ledInput, beeperInput, inputActiveHigh]
    }

    public static let pulseUsRange = 20...100
    public static let intervalUsRange = 200...20_000
    /// The least gap between frames: receivers end a frame on silence (5 ms to 50 ms), and the gap must
    /// be longer than the longest of those, and than the longest bit interval (20 ms).
    public static let frameGapMsRange = 50...10_000

    /// The chip the lines are on (`wiegand-chip`; unset: the `[gpio]` section's `gpio-chip`): a label
    /// (pinctrl-rp1), a name (gpiochip0) or a path.
    public var chip: String? = nil
    /// `wiegand-d0`, `wiegand-d1`: line names or offsets. Both or neither; neither means no Wiegand output.
    public var d0: GPIOLineSpec? = nil
    public var d1: GPIOLineSpec? = nil
    public var format: WiegandFormat = .h10301
    public var map: WiegandMap = .decimal
    public var facility: WiegandFacility = .none
    public var overRange: WiegandOverRange = .refuse
    /// Width of each low pulse, microseconds.
    public var pulseUs: Int = 50
    /// From the start of one bit's pulse to the start of the next (SIA's Tpi), microseconds.
    public var intervalUs: Int = 2000
    /// The least time from the end of one frame's last pulse to the start of the next frame, milliseconds.
    public var frameGapMs: Int = 100
    /// false: idle high, pulses low (the Wiegand standard). true: for an interface board that inverts.
    public var activeHigh: Bool = false
    /// `wiegand-led-input`, `wiegand-beeper-input`: inputs the panel drives (line names or offsets).
    public var ledInput: GPIOLineSpec? = nil
    public var beeperInput: GPIOLineSpec? = nil
    /// false: an input is active while the panel pulls it low. true: while it is high.
    public var inputActiveHigh: Bool = false

    public init() {}

    /// True when D0/D1 are configured (the daemon builds a Wiegand output).
    public var isEnabled: Bool { d0 != nil || d1 != nil }
    public var hasInputs: Bool { ledInput != nil || beeperInput != nil }

    /// Sets one option from its text (command line or config file). Throws naming the option and what
    /// it takes.
    public mutating func apply(option: String, value: String) throws(WiegandSettingsError) {
        func line() throws(WiegandSettingsError) -> GPIOLineSpec? {
            if value.isEmpty { return nil }
            guard let spec = GPIOLineSpec.parse(value) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is not a line: give a line name (GPIO17) or an offset (17)")
            }
            return spec
        }
        func number(_ range: ClosedRange<Int>, unit: String) throws(WiegandSettingsError) -> Int {
            guard value.count <= 9, !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(value),
                  range.contains(n) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is out of range: allowed \(range.lowerBound)-\(range.upperBound) (\(unit))")
            }
            return n
        }
        func flag() throws(WiegandSettingsError) -> Bool {
            switch value.lowercased() {
            case "yes", "true", "on", "1", "": return true
            case "no", "false", "off", "0": return false
            default: throw WiegandSettingsError(option: option, "\(option) '\(value)' is not yes or no")
            }
        }
        switch option {
        case Option.chip: chip = value.isEmpty ? nil : value
        case Option.d0: d0 = try line()
        case Option.d1: d1 = try line()
        case Option.ledInput: ledInput = try line()
        case Option.beeperInput: beeperInput = try line()
        case Option.format:
            guard let f = WiegandFormat.parse(value) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is not a format: allowed \(WiegandFormat.allowedText)")
            }
            format = f
        case Option.map:
            guard let m = WiegandMap.parse(value) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is not a mapping: allowed \(WiegandMap.allowedText)")
            }
            map = m
        case Option.facility:
            guard let f = WiegandFacility.parse(value) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is not a facility code: allowed \(WiegandFacility.allowedText)")
            }
            facility = f
        case Option.overRange:
            guard let r = WiegandOverRange(rawValue: value.lowercased()) else {
                throw WiegandSettingsError(option: option, "\(option) '\(value)' is not allowed: allowed \(WiegandOverRange.allowedText)")
            }
            overRange = r
        case Option.pulseUs: pulseUs = try number(Self.pulseUsRange, unit: "microseconds")
        case Option.intervalUs: intervalUs = try number(Self.intervalUsRange, unit: "microseconds")
        case Option.frameGapMs: frameGapMs = try number(Self.frameGapMsRange, unit: "milliseconds")
        case Option.activeHigh: activeHigh = try flag()
        case Option.inputActiveHigh: inputActiveHigh = try flag()
        default:
            throw WiegandSettingsError(option: option, "unknown Wiegand option '\(option)' (options: \(Option.all.joined(separator: ", ")))")
        }
    }

    /// Refuses settings that cannot work, with the option and the allowed values.
    public func validate() throws(WiegandSettingsError) {
        func range(_ value: Int, _ r: ClosedRange<Int>, _ option: String, _ unit: String) throws(WiegandSettingsError) {
            guard r.contains(value) else {
                throw WiegandSettingsError(option: option, "\(option) \(value) is out of range: allowed \(r.lowerBound)-\(r.upperBound) (\(unit))")
            }
        }
        try range(pulseUs, Self.pulseUsRange, Option.pulseUs, "microseconds")
        try range(intervalUs, Self.intervalUsRange, Option.intervalUs, "microseconds")
        try range(frameGapMs, Self.frameGapMsRange, Option.frameGapMs, "milliseconds")
        if case .raw(let n) = format, !WiegandFormat.rawBitRange.contains(n) {
            throw WiegandSettingsError(option: Option.format, "\(Option.format) raw:\(n): N must be 1-64")
        }
        switch map {
        case .digits(let a, let b):
            guard a >= 1, a <= b, b <= WiegandMap.maxPosition, b - a + 1 <= WiegandMap.maxDecimalDigits else {
                throw WiegandSettingsError(option: Option.map, "\(Option.map) digits:\(a)-\(b): allowed \(WiegandMap.allowedText)")
            }
        default: break
        }
        switch facility {
        case .none: break
        case .fixed(let f):
            guard format.facilityBits > 0 else {
                throw WiegandSettingsError(option: Option.facility, "\(Option.facility) is given but \(Option.format) \(format) has no facility field; leave \(Option.facility) unset")
            }
            guard f <= format.maxFacility else {
                throw WiegandSettingsError(option: Option.facility, "\(Option.facility) \(f) does not fit \(Option.format) \(format): allowed 0-\(format.maxFacility)")
            }
        case .digits(let a, let b):
            guard format.facilityBits > 0 else {
                throw WiegandSettingsError(option: Option.facility, "\(Option.facility) is given but \(Option.format) \(format) has no facility field; leave \(Option.facility) unset")
            }
            guard case .digits = map else {
                throw WiegandSettingsError(option: Option.facility, "\(Option.facility) digits:\(a)-\(b) takes digits of the payload, which needs \(Option.map) digits:A-B (it is \(map)); or give a fixed facility code")
            }
            guard a >= 1, a <= b, b <= WiegandMap.maxPosition, b - a + 1 <= WiegandMap.maxDecimalDigits else {
                throw WiegandSettingsError(option: Option.facility, "\(Option.facility) digits:\(a)-\(b): allowed \(WiegandMap.allowedText)")
            }
        }
        guard isEnabled else {
            if hasInputs {
                let which = [ledInput.map { _ in Option.ledInput }, beeperInput.map { _ in Option.beeperInput }].compactMap { $0 }
                throw WiegandSettingsError(option: which[0], "\(which.joined(separator: " and ")) given without \(Option.d0) and \(Option.d1): the panel's inputs belong to a Wiegand reader; give D0 and D1 too")
            }
            return
        }
        guard d0 != nil, d1 != nil else {
            let missing = d0 == nil ? Option.d0 : Option.d1
            throw WiegandSettingsError(option: missing, "\(missing) is missing: Wiegand needs both \(Option.d0) and \(Option.d1) (line names like GPIO5 or offsets)")
        }
        guard let chip, !chip.isEmpty else {
            throw WiegandSettingsError(option: Option.chip, "\(Option.d0)/\(Option.d1) need a GPIO chip (--gpio-chip, or --\(Option.chip) for another chip): a label like pinctrl-rp1, a name like gpiochip0 or a path")
        }
        // That D0, D1 and the inputs are four lines is the catalogue's one-owner check (GPIOLineClaim).
    }

    /// "26 (H10301), D0 GPIO5 / D1 GPIO6 on scangate-sim, pulses 50 us every 2000 us, frames 100 ms apart".
    public var summary: String {
        let lines = "D0 \(d0.map(\.description) ?? "-") / D1 \(d1.map(\.description) ?? "-") on \(chip ?? "-")"
        let level = activeHigh ? ", active-high" : ""
        return "\(format), \(lines), pulses \(pulseUs) us every \(intervalUs) us\(level), frames \(frameGapMs) ms apart"
    }
}

extension RunSettings {
    public var wiegand: WiegandSettings {
        get { self[WiegandSettings.self] }
        set { self[WiegandSettings.self] = newValue }
    }

    /// The Wiegand settings as the output uses them: the chip is the `[gpio]` one unless `wiegand-chip`
    /// names another.
    public var effectiveWiegand: WiegandSettings {
        var w = wiegand
        if w.chip == nil { w.chip = gpio.chip }
        return w
    }
}

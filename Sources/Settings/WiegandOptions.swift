import Core

extension ConfigSection {
    public static let wiegand = ConfigSection("wiegand")
}

extension OptionTable {
    /// `[wiegand]`: the Wiegand door output on two GPIO lines, and the panel's LED and beeper inputs.
    public static let wiegand: [OptionSpec] = [
        wiegandOption("wiegand-d0", "LINE", "", "D0 line (the 0 bits): an offset or a line name (GPIO12); with wiegand-d1 turns the Wiegand output on",
                      { $0.d0?.description ?? "" }),
        wiegandOption("wiegand-d1", "LINE", "", "D1 line (the 1 bits): an offset or a line name (GPIO13)", { $0.d1?.description ?? "" }),
        wiegandOption("wiegand-chip", "LABEL|NAME|PATH", "", "the chip of the Wiegand lines when it is not gpio-chip", { $0.chip ?? "" }),
        wiegandOption("wiegand-format", "FORMAT", "26", "frame layout: \(WiegandFormat.allowedText) (26 = HID H10301, 34, 35 = Corporate 1000, 37 = H10304, 37-h10302)",
                      { $0.format.name }),
        wiegandOption("wiegand-map", "MAP", "decimal", "how a code becomes the number: \(WiegandMap.allowedText)",
                      { $0.map.description }),
        wiegandOption("wiegand-facility", "N", "", "the facility or company code when the payload has none: \(WiegandFacility.allowedText)",
                      { $0.facility == .none ? "" : $0.facility.description }),
        wiegandOption("wiegand-over-range", "POLICY", "refuse", "a number that does not fit the format: refuse (not sent on Wiegand; logged, in the JSON) or low-bits (keep the low bits, as some readers do)",
                      { $0.overRange.rawValue }),
        wiegandOption("wiegand-pulse-us", "US", "50", "width of each low pulse, 20-100 microseconds", { String($0.pulseUs) }),
        wiegandOption("wiegand-interval-us", "US", "2000", "from one bit's pulse to the next, 200-20000 microseconds", { String($0.intervalUs) }),
        wiegandOption("wiegand-frame-gap-ms", "MS", "100", "the least time between two frames, 50-10000 ms", { String($0.frameGapMs) }),
        wiegandFlag("wiegand-active-high", "lines idle low and pulse high, for an interface board that inverts", \.activeHigh),
        wiegandOption("wiegand-led-input", "LINE", "", "input the panel drives low to light the reader's LED green (feedback); an offset or a line name",
                      { $0.ledInput?.description ?? "" }),
        wiegandOption("wiegand-beeper-input", "LINE", "", "input the panel drives low to sound the reader's buzzer and beep; an offset or a line name",
                      { $0.beeperInput?.description ?? "" }),
        wiegandFlag("wiegand-input-active-high", "the panel's LED and beeper inputs are active when high", \.inputActiveHigh),
    ]

    private static func wiegandOption(_ name: String, _ placeholder: String, _ defaultText: String, _ help: String,
                                      _ show: @escaping @Sendable (WiegandSettings) -> String) -> OptionSpec {
        OptionSpec(name, .wiegand, .value(placeholder: placeholder), default: defaultText, help: help,
                   apply: { s, v in try applyWiegand(&s, name, v.trimmingSpaces) },
                   show: { show($0.wiegand) })
    }

    private static func wiegandFlag(_ name: String, _ help: String,
                                    _ key: WritableKeyPath<WiegandSettings, Bool> & Sendable) -> OptionSpec {
        OptionSpec(name, .wiegand, .flag, default: "false", help: help,
                   apply: { s, v in s.wiegand[keyPath: key] = try ParseValue.bool(v) },
                   show: { String($0.wiegand[keyPath: key]) })
    }

    /// The settings' own parser; its message leads with the option's name, which the caller adds.
    private static func applyWiegand(_ s: inout RunSettings, _ name: String, _ value: String) throws {
        do {
            try s.wiegand.apply(option: name, value: value)
        } catch {
            let message = error.message.hasPrefix(name + " ") ? String(error.message.dropFirst(name.count + 1)) : error.message
            throw OptionValueError(message)
        }
    }
}

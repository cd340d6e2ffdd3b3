import Core

extension ConfigSection {
    public static let doorRelay = ConfigSection("door-relay")
}

extension OptionTable {
    /// `[door-relay]`: a door strike driven from the kiosk alone, through a relay on one GPIO line.
    public static let doorRelay: [OptionSpec] = [
        OptionSpec(DoorRelaySettings.Option.line, .doorRelay, .value(placeholder: "LINE"), default: "",
                   help: "door strike relay line: an offset (26) or a line name (GPIO26); pulsed for each accepted read (with credential-format: each accepted pass); unset: no relay",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       if t.isEmpty { s.doorRelay.line = nil; return }
                       guard let spec = GPIOLineSpec.parse(t) else {
                           throw OptionValueError("'\(v)' is not a line offset (0-65535) or a line name like GPIO26")
                       }
                       s.doorRelay.line = spec
                   },
                   show: { $0.doorRelay.line?.description ?? "" }),
        OptionSpec(DoorRelaySettings.Option.chip, .doorRelay, .value(placeholder: "LABEL|NAME|PATH"), default: "",
                   help: "the chip of the relay line when it is not gpio-chip",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.doorRelay.chip = t.isEmpty ? nil : t
                   },
                   show: { $0.doorRelay.chip ?? "" }),
        OptionSpec(DoorRelaySettings.Option.pulseMs, .doorRelay, .value(placeholder: "MS"), default: "3000",
                   help: "how long the relay holds the door open for one accepted read, 100-60000 ms (another accepted read meanwhile extends it)",
                   apply: { s, v in s.doorRelay.pulseMs = try ParseValue.int(v, in: DoorRelaySettings.pulseRange) },
                   show: { String($0.doorRelay.pulseMs) }),
        OptionSpec(DoorRelaySettings.Option.activeLow, .doorRelay, .flag, default: "false",
                   help: "the relay is energised by a low level (most opto-isolated relay boards); idle is then high",
                   apply: { s, v in s.doorRelay.activeLow = try ParseValue.bool(v) },
                   show: { String($0.doorRelay.activeLow) }),
        OptionSpec(DoorRelaySettings.Option.driver, .doorRelay, .value(placeholder: "reads|panel"), default: "reads",
                   help: "what energises the relay: reads (each accepted read pulses it; an OSDP panel's osdp_OUT is honoured too) or panel (only the OSDP panel's osdp_OUT; reads no longer pulse it)",
                   apply: { s, v in s.doorRelay.driver = try ParseValue.choice(v, DoorRelayDriver.allCases.map { ($0.rawValue, $0) }) },
                   show: { $0.doorRelay.driver.rawValue }),
    ]
}

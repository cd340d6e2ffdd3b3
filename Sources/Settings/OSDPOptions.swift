import Core

extension ConfigSection {
    public static let osdp = ConfigSection("osdp")
}

extension OptionTable {
    /// `[osdp]`: ScanGate as an OSDP v2 reader (PD) on a panel's RS-485 line.
    public static let osdp: [OptionSpec] = [
        OptionSpec("osdp", .osdp, .value(placeholder: "PATH"), default: "",
                   help: "answer an OSDP panel as a reader on this tty (/dev/ttyUSB0, /dev/serial/by-id/..., /dev/ttyAMA0); unset: no OSDP",
                   apply: { s, v in
                       let path = v.trimmingSpaces
                       s.osdp.device = path.isEmpty ? nil : path
                   },
                   show: { $0.osdp.device ?? "" }),
        OptionSpec("osdp-address", .osdp, .value(placeholder: "N"), default: "0",
                   help: "the reader's address on the bus, 0-126 (a panel's COMSET changes it and it is kept in osdp-state-file)",
                   apply: { s, v in s.osdp.address = try ParseValue.int(v, in: 0...126) },
                   show: { String($0.osdp.address) }),
        OptionSpec("osdp-baud", .osdp, .value(placeholder: "N"), default: "9600",
                   help: "line speed: \(OSDPSettings.allowedBauds.map(String.init).joined(separator: ", "))",
                   apply: { s, v in
                       guard let n = Int(v.trimmingSpaces), OSDPSettings.allowedBauds.contains(n) else {
                           throw OptionValueError("'\(v)' is not an OSDP speed (\(OSDPSettings.allowedBauds.map(String.init).joined(separator: ", ")))")
                       }
                       s.osdp.baud = n
                   },
                   show: { String($0.osdp.baud) }),
        OptionSpec("osdp-rs485", .osdp, .flag, default: "false",
                   help: "RS-485 mode of the UART (TIOCSRS485: RTS drives the transceiver while sending); off for USB RS-485 adapters",
                   apply: { s, v in s.osdp.rs485 = try ParseValue.bool(v) },
                   show: { String($0.osdp.rs485) }),
        OptionSpec("osdp-secure", .osdp, .value(placeholder: "MODE"), default: "required",
                   help: "the AES-128 secure channel: required (nothing but ID, CAP and the handshake in plain text), optional, off",
                   apply: { s, v in s.osdp.secure = try ParseValue.choice(v, OSDPSecureMode.allCases.map { ($0.rawValue, $0) }) },
                   show: { $0.osdp.secure.rawValue }),
        OptionSpec("osdp-scbk-file", .osdp, .value(placeholder: "PATH"), default: "/var/lib/scangate/osdp-scbk",
                   help: "the secure channel base key: 32 hex digits, mode 0600, owned by the service user; a panel's KEYSET replaces it atomically",
                   apply: { s, v in s.osdp.scbkFile = v.trimmingSpaces },
                   show: { $0.osdp.scbkFile }),
        OptionSpec("osdp-install-mode", .osdp, .flag, default: "false",
                   help: "accept the default key SCBK-D and one KEYSET from the panel, then leave install mode",
                   apply: { s, v in s.osdp.installMode = try ParseValue.bool(v) },
                   show: { String($0.osdp.installMode) }),
        OptionSpec("osdp-state-file", .osdp, .value(placeholder: "PATH"), default: "/var/lib/scangate/osdp-state",
                   help: "where the address and speed a panel set (COMSET) and the installed key's check value are kept across restarts",
                   apply: { s, v in s.osdp.stateFile = v.trimmingSpaces },
                   show: { $0.osdp.stateFile }),
        OptionSpec("osdp-max-card-bytes", .osdp, .value(placeholder: "N"), default: "64",
                   help: "a code with more bytes is refused for OSDP only (libosdp's panel takes at most 64), 1-1000",
                   apply: { s, v in s.osdp.maxCardBytes = try ParseValue.int(v, in: OSDPSettings.maxCardBytesRange) },
                   show: { String($0.osdp.maxCardBytes) }),
        OptionSpec("osdp-card-format", .osdp, .value(placeholder: "FORMAT"), default: "raw",
                   help: "what osdp_RAW carries: raw (the code's bytes, format 0) or wiegand (the [wiegand] section's bits, format 1)",
                   apply: { s, v in s.osdp.cardFormat = try ParseValue.choice(v, OSDPCardFormat.allCases.map { ($0.rawValue, $0) }) },
                   show: { $0.osdp.cardFormat.rawValue }),
        OptionSpec("osdp-ttl-ms", .osdp, .value(placeholder: "MS"), default: "5000",
                   help: "a read the panel has not polled for within this time is dropped, never sent late",
                   apply: { s, v in s.osdp.ttlMs = try ParseValue.int(v, in: OSDPSettings.ttlRange) },
                   show: { String($0.osdp.ttlMs) }),
        OptionSpec("osdp-vendor-code", .osdp, .value(placeholder: "OUI"), default: "0",
                   help: "your IEEE OUI, reported in osdp_PDID: 1-16777215 or 0x hex; required with osdp (0 is refused)",
                   apply: { s, v in
                       let t = v.trimmingSpaces.lowercased()
                       let n = t.hasPrefix("0x") ? Int(t.dropFirst(2), radix: 16) : Int(t)
                       guard let n, (0...0xFF_FFFF).contains(n) else {
                           throw OptionValueError("'\(v)' is not a 24-bit vendor code (0 to 16777215, or 0x000000 to 0xFFFFFF)")
                       }
                       s.osdp.vendorCode = n
                   },
                   show: { String($0.osdp.vendorCode) }),
        OptionSpec("osdp-model", .osdp, .value(placeholder: "N"), default: "1",
                   help: "the model number in osdp_PDID, 0-255",
                   apply: { s, v in s.osdp.model = try ParseValue.int(v, in: 0...255) },
                   show: { String($0.osdp.model) }),
        OptionSpec("osdp-serial", .osdp, .value(placeholder: "N"), default: "",
                   help: "the serial number in osdp_PDID, 0-4294967295; unset: derived from /etc/machine-id",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       if t.isEmpty { s.osdp.serial = nil; return }
                       guard let n = UInt32(t) else { throw OptionValueError("'\(v)' is not a number from 0 to 4294967295") }
                       s.osdp.serial = n
                   },
                   show: { $0.osdp.serial.map(String.init) ?? "" }),
        OptionSpec("osdp-offline-after-ms", .osdp, .value(placeholder: "MS"), default: "8000",
                   help: "no command from the panel for this long: controller offline, the secure channel dropped (the spec's 8 s)",
                   apply: { s, v in s.osdp.offlineAfterMs = try ParseValue.int(v, in: OSDPSettings.offlineRange) },
                   show: { String($0.osdp.offlineAfterMs) }),
        OptionSpec("osdp-tamper-line", .osdp, .value(placeholder: "LINE"), default: "",
                   help: "a tamper switch (GPIO input; offset or name): reported to the panel in LSTATR and ISTATR input 0; unset: none",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       if t.isEmpty { s.osdp.tamperLine = nil; return }
                       guard let spec = GPIOLineSpec.parse(t) else {
                           throw OptionValueError("'\(v)' is not a line offset (0-65535) or a line name like GPIO5")
                       }
                       s.osdp.tamperLine = spec
                   },
                   show: { $0.osdp.tamperLine?.description ?? "" }),
        OptionSpec("osdp-tamper-active-low", .osdp, .flag, default: "false",
                   help: "the tamper input reads low when tampered with (a contact that closes to ground when the case opens)",
                   apply: { s, v in s.osdp.tamperActiveLow = try ParseValue.bool(v) },
                   show: { String($0.osdp.tamperActiveLow) }),
        OptionSpec("osdp-power-line", .osdp, .value(placeholder: "LINE"), default: "",
                   help: "a supply monitor or UPS output (GPIO input), active on power failure: reported in LSTATR; unset: none",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       if t.isEmpty { s.osdp.powerLine = nil; return }
                       guard let spec = GPIOLineSpec.parse(t) else {
                           throw OptionValueError("'\(v)' is not a line offset (0-65535) or a line name like GPIO5")
                       }
                       s.osdp.powerLine = spec
                   },
                   show: { $0.osdp.powerLine?.description ?? "" }),
        OptionSpec("osdp-power-active-low", .osdp, .flag, default: "false",
                   help: "the power input reads low on power failure (a power-good signal)",
                   apply: { s, v in s.osdp.powerActiveLow = try ParseValue.bool(v) },
                   show: { String($0.osdp.powerActiveLow) }),
        OptionSpec("osdp-power-undervoltage", .osdp, .flag, default: "false",
                   help: "also report power failure while a Raspberry Pi's firmware flags under-voltage (hwmon rpi_volt, in0_lcrit_alarm)",
                   apply: { s, v in s.osdp.powerUndervoltage = try ParseValue.bool(v) },
                   show: { String($0.osdp.powerUndervoltage) }),
        OptionSpec("door-contact-line", .osdp, .value(placeholder: "LINE"), default: "",
                   help: "the door contact (GPIO input): ISTATR input 1, changes sent to the panel unsolicited; unset: none",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       if t.isEmpty { s.osdp.doorContactLine = nil; return }
                       guard let spec = GPIOLineSpec.parse(t) else {
                           throw OptionValueError("'\(v)' is not a line offset (0-65535) or a line name like GPIO5")
                       }
                       s.osdp.doorContactLine = spec
                   },
                   show: { $0.osdp.doorContactLine?.description ?? "" }),
        OptionSpec("door-contact-active-low", .osdp, .flag, default: "false",
                   help: "the door contact reads low when the door is open",
                   apply: { s, v in s.osdp.doorContactActiveLow = try ParseValue.bool(v) },
                   show: { String($0.osdp.doorContactActiveLow) }),
        OptionSpec("osdp-input-chip", .osdp, .value(placeholder: "LABEL|NAME|PATH"), default: "",
                   help: "the chip of the tamper, power and door-contact lines when it is not gpio-chip",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.osdp.inputChip = t.isEmpty ? nil : t
                   },
                   show: { $0.osdp.inputChip ?? "" }),
        OptionSpec("osdp-input-debounce-ms", .osdp, .value(placeholder: "MS"), default: "20",
                   help: "an input's new level counts once it has held this long, 0-1000 ms",
                   apply: { s, v in s.osdp.inputDebounceMs = try ParseValue.int(v, in: OSDPSettings.debounceRange) },
                   show: { String($0.osdp.inputDebounceMs) }),
    ]
}

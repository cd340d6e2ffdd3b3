import Core

/// `osdp-secure`: whether the panel must set up the secure channel.
public enum OSDPSecureMode: String, CaseIterable, Equatable, Sendable {
    /// Only osdp_ID, osdp_CAP, osdp_CHLNG and osdp_SCRYPT are answered in plain text; everything else is
    /// NAK 06 until the channel is up, and no read leaves without it.
    case required
    /// Plain or secure, as the panel chooses.
    case optional
    /// No secure channel: osdp_PDCAP says so, CHLNG and security blocks are NAK 05.
    case off
}

/// `osdp-card-format`: what osdp_RAW carries for a read.
public enum OSDPCardFormat: String, CaseIterable, Equatable, Sendable {
    /// The door data's bytes, format code 0 (raw bits, unspecified format), bit count = 8 × bytes.
    case raw
    /// The bits the Wiegand output would send for the read, format code 1 (Wiegand: parity, data,
    /// parity), left-justified in the bytes.
    case wiegand
}

/// The `[osdp]` section: ScanGate as an OSDP v2 reader (PD) on a panel's RS-485 line. A value type with
/// the defaults written once; `validate()` throws errors that name the option and what is allowed.
/// `device == nil` means OSDP is off. Runtime state (the port, the link, the channel) is `OSDPOutput`'s.
public struct OSDPSettings: SettingsSection {
    /// `osdp`: the serial device (`/dev/ttyUSB0`, `/dev/serial/by-id/...`, `/dev/ttyAMA0`).
    public var device: String? = nil
    /// `osdp-address`: 0-126 (127 is the broadcast address).
    public var address: Int = 0
    /// `osdp-baud`: 9600, 19200, 38400, 57600, 115200 or 230400.
    public var baud: Int = 9600
    /// `osdp-rs485`: put the UART in RS-485 mode (TIOCSRS485, RTS high while sending) for a transceiver
    /// whose driver-enable is wired to RTS. Leave off for USB RS-485 adapters (they switch by themselves).
    public var rs485 = false
    /// `osdp-secure`.
    public var secure: OSDPSecureMode = .required
    /// `osdp-scbk-file`: the secure channel base key, 32 hex digits, mode 0600, owned by the service user.
    /// Written (atomically) when the panel sends osdp_KEYSET, so it lives in the state directory.
    public var scbkFile = "/var/lib/scangate/osdp-scbk"
    /// `osdp-install-mode`: accept SCBK-D and one osdp_KEYSET from the panel, then leave install mode.
    public var installMode = false
    /// `osdp-state-file`: the address and baud a panel set with osdp_COMSET, and which key it installed.
    public var stateFile = "/var/lib/scangate/osdp-state"
    /// `osdp-max-card-bytes`: a read with more door-data bytes is refused for OSDP (libosdp's CP, and
    /// panels built on it, fail to decode an osdp_RAW over 64 bytes and drop the reader for 300 s).
    public var maxCardBytes = 64
    /// `osdp-card-format`.
    public var cardFormat: OSDPCardFormat = .raw
    /// `osdp-ttl-ms`: a read still waiting for a poll after this long is dropped, never sent late.
    public var ttlMs = 5000
    /// `osdp-vendor-code`: the IEEE OUI in osdp_PDID, 1 to 0xFFFFFF. 0 (unset) is refused when OSDP is
    /// on: a conformance tool fails a PDID whose OUI is all zeros.
    public var vendorCode: Int = 0
    /// `osdp-model`: 0-255.
    public var model: Int = 1
    /// `osdp-serial`: 0-4294967295; nil derives it from /etc/machine-id.
    public var serial: UInt32? = nil
    /// `osdp-offline-after-ms`: no command from the panel for this long means the panel is gone (the spec
    /// says 8 s): the link is reported offline and the secure channel dropped.
    public var offlineAfterMs = 8000

    /// `osdp-tamper-line`: a tamper switch (GPIO input), reported in osdp_LSTATR and as input 0 of
    /// osdp_ISTATR. nil: none (tamper always normal).
    public var tamperLine: GPIOLineSpec? = nil
    /// `osdp-tamper-active-low`: the switch reads low when the case is opened.
    public var tamperActiveLow = false
    /// `osdp-power-line`: a supply monitor or UPS output (GPIO input), active on power failure; reported
    /// in osdp_LSTATR.
    public var powerLine: GPIOLineSpec? = nil
    /// `osdp-power-active-low`.
    public var powerActiveLow = false
    /// `osdp-power-undervoltage`: also report power failure while a Raspberry Pi's firmware flags
    /// under-voltage (the kernel's rpi_volt hwmon device, in0_lcrit_alarm).
    public var powerUndervoltage = false
    /// `door-contact-line`: the door's contact (GPIO input), input 1 of osdp_ISTATR.
    public var doorContactLine: GPIOLineSpec? = nil
    /// `door-contact-active-low`.
    public var doorContactActiveLow = false
    /// `osdp-input-chip`: the chip of the three input lines when it is not gpio-chip.
    public var inputChip: String? = nil
    /// `osdp-input-debounce-ms`: an input's level counts once it has held this long.
    public var inputDebounceMs = 20

    public init() {}

    /// The lines the PD watches, with the option that names each.
    public var inputLines: [(option: String, line: GPIOLineSpec)] {
        [("osdp-tamper-line", tamperLine), ("osdp-power-line", powerLine), ("door-contact-line", doorContactLine)]
            .compactMap { pair in pair.1.map { (pair.0, $0) } }
    }

    /// Where an OUI comes from, for the message that refuses a zero vendor code.
    public static let vendorCodeHelp = "set osdp-vendor-code to your company's IEEE OUI (24 bits; registered at https://standards.ieee.org/products-programs/regauth/, the first three bytes of your own MAC addresses), as 0x hex or decimal; a bench or test rig may use any non-zero value, for example 0x0A0B0C, but never ship it"
    public static let debounceRange = 0...1000

    /// The line speeds OSDP defines.
    public static let allowedBauds = [9600, 19200, 38400, 57600, 115200, 230400]
    public static let maxCardBytesRange = 1...1000
    public static let ttlRange = 100...600_000
    public static let offlineRange = 1000...600_000

    /// Checks each value and the combination; errors name the option and the allowed values.
    public func validate() throws(UsageError) {
        guard let device else { return }
        if device.isEmpty { throw UsageError("osdp: the device path is empty (use e.g. /dev/ttyUSB0 or /dev/serial/by-id/...)") }
        if !(0...126).contains(address) {
            throw UsageError("osdp-address: \(address) is not an OSDP address (0 to 126; 127 is the broadcast address)")
        }
        if !Self.allowedBauds.contains(baud) {
            throw UsageError("osdp-baud: \(baud) is not an OSDP speed (\(Self.allowedBauds.map(String.init).joined(separator: ", ")))")
        }
        if SerialBaudRate(baud) == nil {
            throw UsageError("osdp-baud: \(baud) is not a termios speed")
        }
        if installMode && secure == .off {
            throw UsageError("osdp-install-mode = yes needs the secure channel: set osdp-secure = required or optional")
        }
        if scbkFile.isEmpty && secure != .off {
            throw UsageError("osdp-scbk-file: empty; the secure channel (osdp-secure = \(secure.rawValue)) needs a key file path")
        }
        if stateFile.isEmpty {
            throw UsageError("osdp-state-file: empty; give a path in a directory the service can write (default /var/lib/scangate/osdp-state)")
        }
        if secure != .off && stateFile == scbkFile {
            throw UsageError("osdp-state-file and osdp-scbk-file are both \(scbkFile): give them different paths")
        }
        if !Self.maxCardBytesRange.contains(maxCardBytes) {
            throw UsageError("osdp-max-card-bytes: \(maxCardBytes) is out of range (\(Self.maxCardBytesRange.lowerBound) to \(Self.maxCardBytesRange.upperBound); 64 is what libosdp's panel accepts)")
        }
        if !Self.ttlRange.contains(ttlMs) {
            throw UsageError("osdp-ttl-ms: \(ttlMs) is out of range (\(Self.ttlRange.lowerBound) to \(Self.ttlRange.upperBound))")
        }
        if !(0...0xFF_FFFF).contains(vendorCode) {
            throw UsageError("osdp-vendor-code: \(vendorCode) does not fit 24 bits (1 to 16777215, 0xFFFFFF)")
        }
        if vendorCode == 0 {
            throw UsageError("osdp-vendor-code: 0 (unset) is not a vendor's OUI, and a panel's conformance check fails a PDID of zeros; \(Self.vendorCodeHelp)")
        }
        if !Self.debounceRange.contains(inputDebounceMs) {
            throw UsageError("osdp-input-debounce-ms: \(inputDebounceMs) is out of range (\(Self.debounceRange.lowerBound) to \(Self.debounceRange.upperBound))")
        }
        let lines = inputLines
        if !lines.isEmpty && (inputChip ?? "").isEmpty {
            throw UsageError("\(lines[0].option) needs a GPIO chip: set osdp-input-chip or gpio-chip (a label such as pinctrl-rp1, a name such as gpiochip0, or a path)")
        }
        for (i, a) in lines.enumerated() {
            for b in lines[(i + 1)...] where a.line == b.line {
                throw UsageError("\(a.option) and \(b.option) both name line \(a.line): give each input its own line")
            }
        }
        if !(0...255).contains(model) {
            throw UsageError("osdp-model: \(model) is out of range (0 to 255)")
        }
        if !Self.offlineRange.contains(offlineAfterMs) {
            throw UsageError("osdp-offline-after-ms: \(offlineAfterMs) is out of range (\(Self.offlineRange.lowerBound) to \(Self.offlineRange.upperBound); the spec's value is 8000)")
        }
    }

    /// "/dev/ttyUSB0 9600 address 0 secure required": for logs.
    public var summary: String {
        var parts = ["\(device ?? "-")", "\(baud) baud", "address \(address)", "secure \(secure.rawValue)"]
        if installMode { parts.append("install mode") }
        if rs485 { parts.append("rs485") }
        return parts.joined(separator: " ")
    }
}

extension RunSettings {
    public var osdp: OSDPSettings {
        get { self[OSDPSettings.self] }
        set { self[OSDPSettings.self] = newValue }
    }

    /// `[osdp]` with the input lines' chip defaulting to gpio-chip.
    public var effectiveOSDP: OSDPSettings {
        var o = osdp
        if o.inputChip == nil { o.inputChip = gpio.chip }
        return o
    }
}

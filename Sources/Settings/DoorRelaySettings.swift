import Core

/// door-relay-driver: what energises the relay.
public enum DoorRelayDriver: String, CaseIterable, Equatable, Sendable {
    /// Each accepted read pulses it for door-relay-ms; an OSDP panel's osdp_OUT is honoured as well (the
    /// relay is energised while either asks for it).
    case reads
    /// Only the OSDP panel's osdp_OUT drives it: accepted reads go to the panel and no longer pulse it.
    case panel
}

/// The `[door-relay]` section: a door strike's relay (or MOSFET) on one GPIO line, pulsed for each
/// accepted read (with credential-format on: each accepted pass). A plain value; the line request and
/// the pulse live in `DoorRelayOutput`.
public struct DoorRelaySettings: SettingsSection {
    /// door-relay: the line, an offset (26) or a line name (GPIO26). nil: no relay.
    public var line: GPIOLineSpec? = nil
    /// door-relay-chip: the chip when it is not gpio-chip (label, name or path).
    public var chip: String? = nil
    /// door-relay-ms: how long the relay is held active for one accepted read.
    public var pulseMs: Int = 3000
    /// door-relay-active-low: the relay is energised by a low level (most opto-isolated relay boards).
    public var activeLow: Bool = false
    /// door-relay-driver: accepted reads (and the panel) or the panel alone.
    public var driver: DoorRelayDriver = .reads

    public init() {}

    public static let pulseRange = 100...60_000

    public enum Option {
        public static let line = "door-relay"
        public static let chip = "door-relay-chip"
        public static let pulseMs = "door-relay-ms"
        public static let activeLow = "door-relay-active-low"
        public static let driver = "door-relay-driver"
    }

    public var isEnabled: Bool { line != nil }

    /// The combination of options, for `run`, `check-config` and `doctor`. Takes the chip after the
    /// gpio-chip default is applied (`RunSettings.effectiveDoorRelay`).
    public func validate() throws(UsageError) {
        guard isEnabled else { return }
        guard let chip, !chip.isEmpty else {
            throw UsageError("--\(Option.line) needs a GPIO chip: set --\(Option.chip) or --gpio-chip (a label such as pinctrl-rp1, a name such as gpiochip0, or a path)")
        }
        guard Self.pulseRange.contains(pulseMs) else {
            throw UsageError("--\(Option.pulseMs): \(pulseMs) is not a whole number of milliseconds from \(Self.pulseRange.lowerBound) to \(Self.pulseRange.upperBound)")
        }
    }

    /// "GPIO26 on pinctrl-rp1, 3000 ms, active-low": for logs.
    public var summary: String {
        guard let line else { return "off" }
        return "\(line) on \(chip ?? "-"), \(pulseMs) ms" + (activeLow ? ", active-low" : "")
            + (driver == .panel ? ", driven by the panel" : "")
    }
}

extension RunSettings {
    public var doorRelay: DoorRelaySettings {
        get { self[DoorRelaySettings.self] }
        set { self[DoorRelaySettings.self] = newValue }
    }

    /// The door relay's settings with door-relay-chip defaulting to gpio-chip.
    public var effectiveDoorRelay: DoorRelaySettings {
        var r = doorRelay
        if r.chip == nil { r.chip = gpio.chip }
        return r
    }
}

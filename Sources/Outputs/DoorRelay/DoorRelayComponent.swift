import Components
import Core
import GPIO
import Platform
import Settings

extension DoctorPart {
    public static let doorRelay = DoctorPart("door-relay")
}

extension DoorRelayOutput {
    /// The `[door-relay]` door output: a door strike's relay on one GPIO line.
    public static func component(calls: any GpiodCalls = SystemGpiodCalls()) -> Component {
        Component(
            name: "door-relay", options: OptionTable.doorRelay,
            role: .output(OutputFactory(
                isConfigured: { $0.doorRelay.isEnabled },
                sameSettings: { $0.effectiveDoorRelay == $1.effectiveDoorRelay },
                validate: { settings in try validate(settings) },
                make: { settings, context in
                    try validate(settings)
                    if let warning = openToAnyCode(settings) { context.logger.warning("door relay: \(warning)") }
                    let relay = try DoorRelayOutput(settings: settings.effectiveDoorRelay, logger: context.logger, calls: calls)
                    // An OSDP panel's osdp_OUT finds it here (also after a reload rebuilt either side).
                    context.relay.attach(relay)
                    return relay
                })),
            doctorFlags: [DoctorFlag("test-relay", help: "pulse the door relay once, for door-relay-ms (the strike should click)",
                                     howToConfigure: "set door-relay = GPIOn and door-relay-chip (or gpio-chip) in [door-relay]",
                                     isConfigured: { $0.doorRelay.isEnabled })],
            lineClaims: { settings in
                let r = settings.effectiveDoorRelay
                guard r.isEnabled, let chip = r.chip, let line = r.line else { return [] }
                return [GPIOLineClaim(section: "door-relay", option: DoorRelaySettings.Option.line, chip: chip, line: line)]
            },
            doctor: { settings, context in
                guard settings.doorRelay.isEnabled else { return [] }
                return doctorRows(settings.effectiveDoorRelay, run: settings, context: context, calls: calls)
            })
    }

    /// The section's own checks. That the relay line is no other device's line is the catalogue's
    /// one-owner check (`lineClaims`).
    public static func validate(_ settings: RunSettings) throws {
        let r = settings.effectiveDoorRelay
        guard r.isEnabled, r.line != nil else { return }
        try r.validate()
        if r.driver == .panel && settings.osdp.device == nil {
            throw UsageError("--\(DoorRelaySettings.Option.driver) = panel needs an OSDP panel to drive the relay: set osdp (the panel's serial device) in [osdp], or use --\(DoorRelaySettings.Option.driver) = reads")
        }
    }

    /// Set when nothing but the camera stands between a printed code and the door: no signed passes and
    /// no payload filter (allowed, for a site that wants it, but said at every start and in doctor). Not
    /// with door-relay-driver = panel: the panel decides then.
    static func openToAnyCode(_ settings: RunSettings) -> String? {
        guard settings.doorRelay.driver == .reads, settings.credential.format == .off, !settings.filter.isActive else { return nil }
        return "neither credential-format nor a payload filter is set: every code read opens the door"
    }
}

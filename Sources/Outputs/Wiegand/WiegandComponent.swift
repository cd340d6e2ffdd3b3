import Components
import Core
import GPIO
import Platform
import Settings

extension DoctorPart {
    public static let wiegand = DoctorPart("wiegand")
}

extension WiegandOutput {
    /// The `[wiegand]` door output: D0/D1 to the panel, and the panel's LED and beeper inputs.
    public static func component(calls: any GpiodCalls = SystemGpiodCalls()) -> Component {
        Component(
            name: "wiegand", options: OptionTable.wiegand,
            role: .output(OutputFactory(
                isConfigured: { $0.wiegand.isEnabled || $0.wiegand.hasInputs },
                sameSettings: { $0.effectiveWiegand == $1.effectiveWiegand },
                validate: { settings in try validate(settings) },
                make: { settings, context in
                    try validate(settings)
                    return try WiegandOutput(settings: settings.effectiveWiegand, logger: context.logger,
                                             feedback: context.feedback, calls: calls)
                })),
            doctorFlags: [DoctorFlag("test-wiegand", help: "send one test number (card 12345) on the Wiegand lines",
                                     howToConfigure: "set wiegand-d0, wiegand-d1 and wiegand-chip (or gpio-chip) in [wiegand]",
                                     isConfigured: { $0.effectiveWiegand.isEnabled })],
            lineClaims: { settings in
                let w = settings.effectiveWiegand
                guard w.isEnabled || w.hasInputs, let chip = w.chip else { return [] }
                let lines: [(String, GPIOLineSpec?)] = [
                    (WiegandSettings.Option.d0, w.d0), (WiegandSettings.Option.d1, w.d1),
                    (WiegandSettings.Option.ledInput, w.ledInput), (WiegandSettings.Option.beeperInput, w.beeperInput),
                ]
                return lines.compactMap { option, line in
                    line.map { GPIOLineClaim(section: "wiegand", option: option, chip: chip, line: $0) }
                }
            },
            doctor: { settings, context in
                let w = settings.effectiveWiegand
                guard w.isEnabled else { return [] }
                return doctorRows(w, context: context, calls: calls)
            })
    }

    /// The section's own checks. That no Wiegand line is another's (D0 and D1, the inputs, an LED, the
    /// relay) is the catalogue's one-owner check (`lineClaims`).
    static func validate(_ settings: RunSettings) throws {
        let w = settings.effectiveWiegand
        guard w.isEnabled || w.hasInputs else { return }
        do {
            try w.validate()
        } catch {
            throw UsageError("\(error.message)")
        }
    }
}

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

    /// Doctor's rows: the lines requested as `run` requests them (and released again), and with
    /// `--test-wiegand` one test number sent and what the lines carried.
    static func doctorRows(_ settings: WiegandSettings, context: DoctorContext, calls: any GpiodCalls) -> [DoctorRow] {
        if context.options.switches.contains("test-wiegand") {
            let result = WiegandDoctor.sendTest(settings: settings, logger: context.logger, calls: calls)
            return [result.passed
                ? .pass(.wiegand, "wiegand test number", result.summary)
                : .fail(.wiegand, "wiegand test number", result.summary, fix: fix(result.summary))]
        }
        var quiet = WiegandRuntime()
        quiet.retryMs = 3_600_000
        var plain = settings
        plain.ledInput = nil
        plain.beeperInput = nil
        do {
            let output = try WiegandOutput(settings: plain, logger: context.logger, feedback: nil, calls: calls, runtime: quiet)
            let health = output.health
            output.close(deadline: .now().adding(milliseconds: 1000))
            guard health.state != .down else {
                // Doctor tries once; the interval the row quotes is run's.
                let why = (health.lastError ?? health.detail)
                    .replacing("every \(quiet.retryMs) ms", with: "every \(WiegandRuntime().retryMs) ms under scangate run")
                return [.fail(.wiegand, "wiegand lines", why, fix: fix(why))]
            }
            return [.pass(.wiegand, "wiegand lines", health.detail)]
        } catch {
            return [.fail(.wiegand, "wiegand lines", "\(error)", fix: fix("\(error)"))]
        }
    }

    private static func fix(_ problem: String) -> String {
        if problem.contains("busy") {
            return "another program holds the line (gpioinfo shows the consumer); stop it, e.g. sudo systemctl stop scangate"
        }
        if problem.contains("EACCES") || problem.contains("EPERM") || problem.contains("ermission") {
            return "add user \(DoctorFixes.serviceUser) to group \(DoctorFixes.gpioGroup) and run doctor as that user"
        }
        return "check wiegand-d0/wiegand-d1 and the chip (gpioinfo lists the lines), and the wiring in hardware.md"
    }
}

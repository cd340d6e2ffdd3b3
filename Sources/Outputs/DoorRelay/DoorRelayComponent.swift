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
                    return try DoorRelayOutput(settings: settings.effectiveDoorRelay, logger: context.logger, calls: calls)
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
    }

    /// Set when nothing but the camera stands between a printed code and the door: no signed passes and
    /// no payload filter (allowed, for a site that wants it, but said at every start and in doctor).
    static func openToAnyCode(_ settings: RunSettings) -> String? {
        guard settings.credential.format == .off, !settings.filter.isActive else { return nil }
        return "neither credential-format nor a payload filter is set: every code read opens the door"
    }

    /// Doctor's rows: the line requested as `run` requests it (inactive) and released again, and with
    /// `--test-relay` one pulse of door-relay-ms.
    static func doctorRows(_ settings: DoorRelaySettings, run: RunSettings, context: DoctorContext, calls: any GpiodCalls) -> [DoctorRow] {
        var runtime = DoorRelayRuntime()
        runtime.retryMs = 3_600_000
        let output: DoorRelayOutput
        do {
            output = try DoorRelayOutput(settings: settings, logger: context.logger, calls: calls, runtime: runtime)
        } catch {
            return [.fail(.doorRelay, "door-relay line", "\(error)", fix: fix("\(error)"))]
        }
        defer { output.close(deadline: .now().adding(milliseconds: 1000)) }
        let health = output.health
        guard health.state != .down else {
            // Doctor tries once; the interval the row quotes is run's, not doctor's one-attempt setting.
            let why = (health.lastError ?? health.detail)
                .replacing("every \(Int(runtime.retryMs)) ms", with: "every \(Int(DoorRelayRuntime().retryMs)) ms under scangate run")
            return [.fail(.doorRelay, "door-relay line", why, fix: fix(why))]
        }
        let level = settings.activeLow ? "idle high, energised low" : "idle low, energised high"
        var rows = [DoctorRow.pass(.doorRelay, "door-relay line", "\(output.lineTitle ?? "\(settings.line?.description ?? "?")"): free, requested as an output, \(level)"
                                   + (openToAnyCode(run).map { "; note: \($0)" } ?? ""))]
        if context.options.switches.contains("test-relay") {
            let offer = output.pulse()
            let idle = offer.isTaken && output.waitUntilIdle(timeoutMs: Double(settings.pulseMs) + 2000)
            let after = output.health
            if case .refused(let reason) = offer {
                rows.append(.fail(.doorRelay, "door-relay pulse", reason, fix: fix(reason)))
            } else if !idle || after.sent == 0 {
                let why = after.lastError ?? "the pulse did not finish"
                rows.append(.fail(.doorRelay, "door-relay pulse", why, fix: fix(why)))
            } else {
                rows.append(.pass(.doorRelay, "door-relay pulse",
                                  "energised once for \(settings.pulseMs) ms, then released (did the strike click and the door open?)"))
            }
        }
        return rows
    }

    private static func fix(_ problem: String) -> String {
        if problem.contains("busy") {
            return "another program holds the line (gpioinfo shows the consumer); stop it, e.g. sudo systemctl stop scangate"
        }
        if problem.contains("EACCES") || problem.contains("EPERM") || problem.contains("ermission") {
            return "add user \(DoctorFixes.serviceUser) to group \(DoctorFixes.gpioGroup) and run doctor as that user"
        }
        return "check door-relay and the chip (gpioinfo lists the lines), and the wiring in hardware.md"
    }
}

import Components
import Core
import GPIO
import Platform
import Settings

extension DoorRelayOutput {
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

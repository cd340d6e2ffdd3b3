import Components
import Core
import GPIO
import Platform
import Settings

extension WiegandOutput {
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

#if canImport(Glibc)
import Glibc
#endif
import Core
import GPIO
import Platform
import Components
import Settings

/// Doctor's GPIO rows: the chip `--gpio-chip` names (label, name, path), then each configured role's line
/// requested as an output the way `run` requests it (`GPIOOutputs`). With `--blink` each line is driven
/// active once for `blinkMilliseconds`, one after the other; every line is inactive and released at the end.
struct GPIODoctor {
    let settings: GPIOSettings
    let options: DoctorOptions
    let logger: Logger
    let calls: any GpiodCalls

    /// Pause between two roles' blinks, so each part can be told apart.
    static let blinkGapMilliseconds: Double = 200

    func run() -> [DoctorRow] {
        guard let chipText = settings.chip else { return [] }
        let roles = settings.lines.keys.sorted()
        let chip: GpiodChipHandle
        switch GPIOLookup.openChip(chipText, calls: calls) {
        case .success(let c): chip = c
        case .failure(let error):
            return [.fail(.gpio, "gpio chip", error.message, fix: chipFix(error))]
                + roles.map { .skip(.gpio, check($0), "not tried: gpio chip failed") }
        }
        let chipRow = DoctorRow.pass(.gpio, "gpio chip", chipDetail(chip, text: chipText))
        // Line titles ("GPIO17", "offset 4 (GPIO4)") while the chip is open; requests go through GPIOOutputs.
        var titles: [GPIORole: String] = [:]
        for (role, spec) in settings.lines {
            if case .success(let line) = GPIOLookup.findLine(spec, on: chip, flag: role.flag, calls: calls) {
                titles[role] = GPIOLookup.lineTitle(spec, line: line, calls: calls)
            }
        }
        calls.closeChip(chip)
        guard !roles.isEmpty else {
            return [chipRow, .pass(.gpio, "gpio lines",
                                   "none configured (--led-green, --led-red, --status-led, --buzzer)")]
        }
        let outputs = GPIOOutputs(settings: settings, calls: calls, logger: logger, clock: SystemFeedbackClock())
        defer { outputs.close() }
        var rows = [chipRow]
        var first = true
        for role in roles {
            guard outputs.openRoles.contains(role) else {
                let error = outputs.problems[role]
                rows.append(.fail(.gpio, check(role), error?.message ?? "\(role.flag): not requested",
                                  fix: error.map(lineFix) ?? "check \(role.flag)"))
                continue
            }
            let title = titles[role] ?? settings.lines[role].map(\.description) ?? "?"
            var detail = "\(role.title) (\(role.flag)) on line \(title): free, requested as an output"
                + (settings.activeLow.contains(role) ? ", active-low" : "")
            if options.blink {
                if !first { sleepThread(milliseconds: Self.blinkGapMilliseconds) }
                first = false
                outputs.set(role, active: true)
                sleepThread(milliseconds: options.blinkMilliseconds)
                outputs.set(role, active: false)
                guard outputs.openRoles.contains(role) else {
                    let error = outputs.problems[role]
                    rows.append(.fail(.gpio, check(role), "blink failed: " + (error?.message ?? "the line was lost"),
                                      fix: error.map(lineFix) ?? "check the chip's driver (`dmesg`)"))
                    continue
                }
                detail += "; blinked \(Int(options.blinkMilliseconds)) ms (did the right part light or buzz?)"
            }
            rows.append(.pass(.gpio, check(role), detail))
        }
        outputs.close()
        return rows
    }

    private func check(_ role: GPIORole) -> String { "gpio \(role.rawValue)" }

    /// "pinctrl-rp1 (gpiochip0) at /dev/gpiochip0, 54 lines".
    private func chipDetail(_ chip: GpiodChipHandle, text: String) -> String {
        let name = calls.chipName(chip)
        let path = GPIOLookup.ChipSpec(text) == .path(text)
            ? text : calls.chipPaths().first { $0.hasSuffix("/" + name) } ?? "/dev/" + name
        return "\(GPIOLookup.chipTitle(chip, calls: calls)) at \(path), \(calls.numLines(chip)) lines"
    }

    private func chipFix(_ error: GPIOError) -> String {
        switch error.kind {
        case .chipNotFound:
            return calls.chipPaths().isEmpty
                ? "this machine has no GPIO chip: on a Raspberry Pi the pinctrl driver provides one; "
                    + "without LEDs or buzzer, remove --gpio-chip"
                : "set --gpio-chip to a label, name or path listed above (`gpiodetect` lists the same)"
        case .chipUnavailable:
            if let errno = error.errno, errno.rawValue == ENOTTY {
                return "give --gpio-chip a GPIO chip (`gpiodetect` lists them)"
            }
            return error.errno.flatMap { DoctorFixes.forOpen($0, device: settings.chip ?? "", group: DoctorFixes.gpioGroup,
                                                             missing: "the chip went away: check `dmesg`") }
                .map { $0 + "; plain Debian also needs udev/60-scangate-gpio.rules" }
                ?? "check the GPIO driver (`dmesg`)"
        default:
            return lineFix(error)
        }
    }

    private func lineFix(_ error: GPIOError) -> String {
        switch error.kind {
        case .chipNotFound, .chipUnavailable:
            return chipFix(error)
        case .lineNotFound:
            return "use a line name or offset of this chip (listed above; `gpioinfo \(settings.chip ?? "")` shows them)"
        case .lineBusy:
            return "free the line: stop the program holding it (`gpioinfo \(settings.chip ?? "")` shows the consumer; "
                + "sudo systemctl stop scangate if it is the service), or wire the part to a free line"
        case .lineConflict:
            return "give each of --led-green, --led-red, --status-led and --buzzer its own line"
        case .lineFailed:
            return error.errno.flatMap { DoctorFixes.forOpen($0, device: settings.chip ?? "", group: DoctorFixes.gpioGroup,
                                                             missing: "the chip went away: check `dmesg`") }
                ?? "check the GPIO driver (`dmesg`) and the line's use (`gpioinfo`)"
        }
    }
}

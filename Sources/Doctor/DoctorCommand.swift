#if canImport(Glibc)
import Glibc
#endif
import Config
import Core
import Platform
import Components
import Settings
import Catalog

/// `scangate doctor [--config FILE] [RUN OPTIONS...] [--blink] [--test-beep] [--test-frame]
/// [--capture-seconds N]`: resolves the settings as `run` does, probes every configured device and prints a
/// pass/fail table with the fix for each failure.
public enum DoctorCommand {
    public static var help: String { helpText(flags: Catalog.components().flatMap(\.doctorFlags)) }

    static func helpText(flags: [DoctorFlag]) -> String {
        let own = flags.map { "  --" + $0.name.padding(20) + $0.help }.joined(separator: "\n")
        let usage = flags.map { "[--\($0.name)]" }.joined(separator: " ")
        return """
        Usage: scangate doctor [--config FILE] [RUN OPTIONS...] \(usage)
                               [--capture-seconds N]

        Checks the configuration and every configured device, the way `scangate run` would use them
        (same --config FILE, default \(ConfigFile.defaultPath) when it exists, and run options; see
        scangate run --help), and prints a table: each check,
        PASS/FAIL/SKIP, what was found, and for each failure the fix. Stop the service first (it holds the
        devices) and run doctor as the service user, so permissions are checked too:
          sudo systemctl stop scangate
          sudo -u scangate scangate doctor --config /etc/scangate/scangate.conf --blink --test-beep --test-frame

        Checks:
          config      the settings resolve, with the checks check-config makes (an error names the
                      file, line and key); a --test-X or --blink switch for a device that is not
                      configured fails
          camera      the formats it offers (V4L2), open as run opens it, frames captured for N
                      seconds with their size, and the codes zbar reads in them (sim: and replay:
                      sources work too)
          gpio        with --gpio-chip: the chip (label, name, path) and each configured line
                      requested
          sound       with --beep: the ALSA device opened
          serial      with --serial: the port opened, speed and format read back from the driver
          osdp        with --osdp: the port opened as run opens it, the panel's commands heard for
                      the N seconds (to which addresses, secure or not), and unless osdp-secure = off
                      the secure channel brought up with osdp-scbk-file for up to 8 s
          wiegand     with --wiegand-d0/--wiegand-d1: D0/D1 requested idle on the chip; with
                      --test-wiegand one test number sent
          mqtt        with --mqtt-host: the settings (files and their permissions), the client
                      certificate's dates, and one connection to the broker (TLS and host name
                      checked, login, refusal reason)
          door-relay  with --door-relay: the line requested inactive (--test-relay: one pulse)
          credential  with --credential-format: the keys and their kids, the clock synchronised or
                      not, and with --credential-one-time the replay store's directory (nothing created)

        Options:
        \(own)
          --capture-seconds N   how long to capture from the camera (default 2; 0.1 to 60)
          -h, --help            show this help
        Device logs go to stderr only with --log-level debug; the table goes to stdout.

        Exit codes: 0 every check passed; 1 the camera failed; 2 a bad option or config (as run would
        refuse it); 4 another check (GPIO, sound, serial, Wiegand, OSDP, MQTT, door relay, signed passes)
        failed while the camera passed.
        """
    }

    /// What one doctor invocation came to: the report (nil for a bad option or --help), the text for
    /// stdout, a one-line error for stderr, and the exit code.
    public struct Outcome: Sendable {
        public var report: DoctorReport?
        public var stdout: String
        public var stderr: String?
        public var exitCode: Int32
    }

    public static func run(_ arguments: [String]) -> Int32 {
        let outcome = execute(arguments)
        if !outcome.stdout.isEmpty { _ = FileDescriptor(rawValue: 1).writeAll(Array((outcome.stdout + "\n").utf8)) }
        if let message = outcome.stderr { Logger.writeToStderr("scangate doctor: " + Logger.escapeControls(message)) }
        return outcome.exitCode
    }

    /// Parses, resolves, probes. Device logs go to stderr only with --log-level debug.
    public static func execute(_ arguments: [String], system: DoctorSystem = DoctorSystem()) -> Outcome {
        let options: DoctorOptions
        let parsed: CommandLineParser.Result
        do throws(UsageError) {
            let flags = Catalog.components(system.devices).flatMap(\.doctorFlags)
            let (own, rest) = try DoctorOptions.extract(arguments, flags: flags)
            options = own
            parsed = try CommandLineParser.parse(rest)
        } catch {
            let runHint = "(see scangate run --help)"
            let message = error.message.hasSuffix(runHint)
                ? error.message.dropLast(runHint.count) + "(see scangate doctor --help and scangate run --help)"
                : error.message
            return Outcome(report: nil, stdout: "", stderr: message, exitCode: ExitCode.usage.rawValue)
        }
        if parsed.help { return Outcome(report: nil, stdout: help, stderr: nil, exitCode: ExitCode.success.rawValue) }
        // The file check-config and the service read, unless --config names another.
        let configPath = parsed.configPath ?? (system.defaultConfigExists() ? ConfigFile.defaultPath : nil)
        return execute(configPath: configPath, flags: parsed.assignments, options: options, system: system)
    }

    /// The in-process entry point: settings from `configPath` and `flags`, then every probe.
    public static func execute(configPath: String?, flags: [(OptionSpec, String)], options: DoctorOptions,
                               system: DoctorSystem = DoctorSystem()) -> Outcome {
        let (settings, configRow) = Doctor.resolve(configPath: configPath, flags: flags)
        guard let settings else {
            let report = DoctorReport(rows: [configRow])
            return Outcome(report: report, stdout: report.table, stderr: configRow.detail, exitCode: report.exitCode)
        }
        let logger = settings.logLevel == .debug ? Logger(level: .debug) : Logger(level: .error, sink: { _ in })
        let report = DoctorReport(rows: [configRow] + Doctor.check(settings, options: options, logger: logger,
                                                                   system: system))
        return Outcome(report: report, stdout: report.table, stderr: nil, exitCode: report.exitCode)
    }
}

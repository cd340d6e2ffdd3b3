import CShim
import Catalog
import Core
#if canImport(Glibc)
@_exported import Glibc
import Doctor
#endif

/// `scangate COMMAND ...`: dispatches to the commands. Each returns the process exit code.
public enum ScanGateCommand {
    public static let version = Catalog.version

    static let commands: [(name: String, summary: String, run: @Sendable ([String]) -> Int32)] = [
        ("run", "run the scanning daemon (also when the first argument is an option)", RunCommand.run),
        ("decode-image", "decode codes in PNG, JPEG or PGM files", DecodeImageCommand.run),
        ("make-code", "draw a QR or barcode in the terminal, or to a PNG/PGM file", MakeCodeCommand.run),
        ("credential", "signed passes: make a signing key, issue a pass, present it as its holder, verify passes (keygen, issue, present, verify)", CredentialCommand.run),
        ("policy", "status lists as the daemon takes them: verify a file, show what is in force (verify, show)", PolicyCommand.run),
        ("render", "write a scenario's frames to a Y4M file or a folder (for replay)", RenderCommand.run),
        ("check-config", "validate a config file and print the effective configuration", CheckConfigCommand.run),
        ("list-cameras", "list V4L2 cameras with their formats, sizes, rates and controls", ListCamerasCommand.run),
        ("status", "ask the running daemon how it is doing (--json: its JSON document; --snapshot: its frame)", StatusCommand.run),
        ("preview", "serve a live page of the daemon's camera with the codes outlined, for aiming it", PreviewCommand.run),
        ("doctor", "check the config and every configured device; print a pass/fail table with fixes", DoctorCommand.run),
        ("bench", "measure throughput, idle cost, latency, memory and start-up against the targets", BenchCommand.run),
        ("soak", "replay a million frames through run and check events, memory and descriptors", SoakCommand.run),
    ]

    public static func main(arguments: [String]) -> Int32 {
        _ = shim_stdout_line_buffered()
        guard let first = arguments.first else {
            // Bare `scangate` used to start the daemon on /dev/video0 for good; a person typing it wants help.
            Logger.writeToStderr(usage + "\n\nscangate: no command given (the daemon is `scangate run`)")
            return ExitCode.usage.rawValue
        }
        switch first {
        case "-h", "--help", "help":
            print(usage)
            return 0
        case "--version", "version":
            print("scangate \(version)")
            return 0
        default:
            if let command = commands.first(where: { $0.name == first }) {
                return command.run(Array(arguments.dropFirst()))
            }
            if first.hasPrefix("--") { return RunCommand.run(arguments) }
            return usageError("unknown command '\(first)' (commands: \(commands.map(\.name).joined(separator: ", ")))")
        }
    }

    static var usage: String {
        var lines = [
            "scangate \(version): headless QR/barcode scanning daemon for kiosks",
            "",
            "Usage: scangate COMMAND [OPTIONS]   (scangate COMMAND --help for each)",
            "",
            "Commands:",
        ]
        for c in commands { lines.append("  " + c.name.padding(16) + c.summary) }
        lines += ["", "Exit codes: 0 ok; 1 the answer is no (decode-image found nothing, doctor's camera failed, status found",
                  "no daemon, credential verify refused the pass, policy verify refused the list, bench/soak missed a",
                  "target); 2 bad flag, value, file or config; 3 the daemon could not run; 4 doctor: a device other",
                  "than the camera failed."]
        return lines.joined(separator: "\n")
    }
}

/// One line on stderr naming what is wrong; exit 2.
func usageError(_ message: String) -> Int32 {
    Logger.writeToStderr("scangate: " + Logger.escapeControls(message))
    return ExitCode.usage.rawValue
}

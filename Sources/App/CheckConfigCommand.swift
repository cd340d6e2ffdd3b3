import Catalog
import Config
import Core
import Decoding
import Platform

/// `scangate check-config [FILE] [RUN OPTIONS...]`: validates a config file (default
/// /etc/scangate/scangate.conf) and prints the effective configuration as INI, every key of every section.
/// Run options after FILE are applied on top, as `scangate run` would. `--example` prints the commented
/// example config generated from the option table (deploy/scangate.conf).
public enum CheckConfigCommand {
    public static let usage = """
        usage: scangate check-config [FILE] [RUN OPTIONS...]
               scangate check-config --example

        Validates FILE (default \(ConfigFile.defaultPath)) with every check `scangate run` makes before it
        opens a device (options and their combinations, each GPIO line named once, credential-keys
        loaded) and prints the effective configuration: defaults, then FILE, then any `scangate run`
        options given after it. Exit 0 when valid; otherwise one line naming the file and the key on
        stderr and exit 2. What needs the devices (camera, ports, lines, broker) is `scangate doctor`'s.
          --example    print the commented example configuration (every key with its default)
          -h, --help   show this help
        """

    public static func run(_ args: [String]) -> Int32 {
        var path: String?
        var rest = args[...]
        if let first = rest.first {
            switch first {
            case "-h", "--help":
                write(usage + "\n", to: 1)
                return ExitCode.success.rawValue
            case "--example":
                guard rest.count == 1 else {
                    write("scangate check-config: --example takes no other arguments\n", to: 2)
                    return ExitCode.usage.rawValue
                }
                write(ConfigFileRendering.example(), to: 1)
                return ExitCode.success.rawValue
            default:
                if !first.hasPrefix("-") {
                    path = first
                    rest = rest.dropFirst()
                }
            }
        }
        do throws(UsageError) {
            let flags = try CommandLineParser.parse(Array(rest))
            if flags.help {
                write(usage + "\n", to: 1)
                return ExitCode.success.rawValue
            }
            if let configFlag = flags.configPath {
                guard path == nil else { throw UsageError("give the config file once (FILE or --config)") }
                path = configFlag
            }
            let file = path ?? ConfigFile.defaultPath
            let settings = try Configuration.resolve(configPath: file, flagAssignments: flags.assignments)
            // The checks `run` makes before it opens anything, and doctor's config row: the same function.
            do {
                try Catalog.check(settings)
                _ = try StreamDecoder.bare(settings: settings.decoder)
            } catch let error as UsageError {
                throw UsageError(Configuration.explain(error.message, configPath: file, flagAssignments: flags.assignments))
            } catch {
                throw UsageError(Configuration.explain("\(error)", configPath: file, flagAssignments: flags.assignments))
            }
            var header = ["effective configuration: defaults, then \(file)"]
            if !flags.assignments.isEmpty {
                header[0] += ", then " + flags.assignments.map { "--\($0.0.name)" }.joined(separator: " ")
            }
            header.append("checked: every option, the lines named once each, the files loaded as run loads them")
            header.append("left to `scangate doctor --config \(file)`: " + Catalog.deviceChecks(settings).joined(separator: ", "))
            write(ConfigFileRendering.effective(settings, header: header), to: 1)
            return ExitCode.success.rawValue
        } catch {
            write("scangate check-config: \(error)\n", to: 2)
            return ExitCode.usage.rawValue
        }
    }

    private static func write(_ text: String, to fd: Int32) {
        _ = FileDescriptor(rawValue: fd).writeAll(Array(text.utf8))
    }
}

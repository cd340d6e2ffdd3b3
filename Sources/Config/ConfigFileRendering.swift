import Core
import Settings

/// Writes settings back as INI: the effective configuration (`check-config`) and the commented example
/// (`deploy/scangate.conf`, from `check-config --example`), both generated from the option table.
public enum ConfigFileRendering {
    /// Every key of every section with its current value, e.g. for `scangate check-config`. Unset keys
    /// are shown commented out (`#serial =`); repeatable keys get one line per value.
    public static func effective(_ settings: RunSettings, table: [OptionSpec] = OptionTable.all,
                                 header: [String] = []) -> String {
        var lines = header.map { "# \($0)" }
        for section in OptionTable.sections(of: table) {
            let options = table.filter { $0.section == section }
            guard !options.isEmpty else { continue }
            if !lines.isEmpty { lines.append("") }
            lines.append("[\(section.rawValue)]")
            for option in options {
                let value = option.show(settings)
                if value.isEmpty && option.defaultText.isEmpty {
                    lines.append("#\(option.name) =")  // not set
                } else if value.isEmpty {
                    // Set to empty where the default is not (`serial-suffix =`: no suffix, not "auto").
                    lines.append(assignment(option.name, value))
                } else if option.repeatable {
                    // show() joins repeated values with commas; one line per value reads back the same.
                    lines += value.split(separator: ",").map { assignment(option.name, String($0)) }
                } else {
                    lines.append(assignment(option.name, value))
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The commented example: every key, commented out, with its help text and default.
    public static func example(table: [OptionSpec] = OptionTable.all) -> String {
        var lines = [
            "# ScanGate configuration: /etc/scangate/scangate.conf",
            "#",
            "# Read by `scangate run --config FILE` (the packaged service does this). Every key is also a",
            "# command-line option of `scangate run` with the same name (`serial-baud = 9600` is",
            "# `--serial-baud 9600`); options given on the command line override this file.",
            "# Each key must be in its own section. Every key below is commented out and shows its default:",
            "# remove the leading '#' to change it. Switches take yes or no (or true/false, on/off).",
            "# Comments start a line with # or ;, or follow a value after ' ;'. Put a value in double",
            "# quotes to keep leading or trailing blanks or a ';' (serial-prefix = \" \").",
            "# Check the file with `scangate check-config /etc/scangate/scangate.conf`;",
            "# reload a running service with `systemctl reload scangate`.",
            "# The package's udev rules give stable names: camera = /dev/scangate-camera and",
            "# serial = /dev/scangate-serial. To adapt their USB IDs, copy /lib/udev/rules.d/60-scangate-*.rules",
            "# to /etc/udev/rules.d and edit the copy (an upgrade replaces the files in /lib).",
            "#",
            "# This file is generated from the option table: scangate check-config --example",
        ]
        for section in OptionTable.sections(of: table) {
            let options = table.filter { $0.section == section }
            guard !options.isEmpty else { continue }
            lines.append("")
            lines.append("[\(section.rawValue)]")
            for option in options {
                lines.append("")
                lines += wrap(option.help, width: 98).map { "# \($0)" }
                if option.repeatable { lines.append("# May be given several times, one per line.") }
                lines.append("# Default: \(option.defaultText.isEmpty ? "(none)" : option.defaultText)")
                lines.append("#" + assignment(option.name, option.defaultText))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func assignment(_ key: String, _ value: String) -> String {
        value.isEmpty ? "\(key) =" : "\(key) = \(ConfigValue.quoteIfNeeded(value))"
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty && current.count + 1 + word.count > width {
                lines.append(current)
                current = ""
            }
            current += current.isEmpty ? String(word) : " " + word
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}

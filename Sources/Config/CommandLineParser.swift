import Core
import Settings

/// Parses the flags of `scangate run` (and of every command that takes settings) against the option
/// table. Every error names the flag and says what is allowed.
///
/// A switch is written `--X`, `--no-X`, `--X=WORD` or `--X WORD`, where WORD is one of
/// yes, no, true, false, on, off; the separate WORD is taken only when it is one of those words, so
/// `--X --other` still works. A value option is `--X VALUE` or `--X=VALUE`.
public struct CommandLineParser {
    public struct Result: Sendable {
        /// Options given on the command line, in order, as (option, value): applied over the config file.
        public var assignments: [(OptionSpec, String)] = []
        public var configPath: String?
        public var help = false
        /// Arguments that are not options, in order (only for a command that takes them).
        public var positionals: [String] = []
        /// The command's own options (not settings), in order, as (name, value); a switch's value is
        /// "true" or "false".
        public var local: [(String, String)] = []
        /// For a setting given under an alias (`--aud`), the alias as typed, by the setting's name
        /// (`credential-audience`): errors name the flag the user wrote.
        public var spelling: [String: String] = [:]

        /// The last value of the command's own option `name`, if given.
        public func localValue(_ name: String) -> String? { local.last { $0.0 == name }?.1 }
        /// All values of the command's own option `name`, in order.
        public func localValues(_ name: String) -> [String] { local.filter { $0.0 == name }.map(\.1) }

        /// `message` with a leading `--NAME` or `NAME ` of a setting given under an alias rewritten
        /// to that alias.
        public func spelledAsTyped(_ message: String) -> String {
            for (name, typed) in spelling {
                for (prefix, replacement) in [("--" + name, typed), (name + " ", typed + " ")] where message.hasPrefix(prefix) {
                    let rest = message.dropFirst(prefix.count)
                    if prefix.hasSuffix(" ") || rest.first == ":" || rest.first == " " || rest.isEmpty {
                        return replacement + rest
                    }
                }
            }
            return message
        }
    }

    /// An option of one command that is not a setting: `--json`, `--image FILE`.
    public struct LocalOption: Sendable {
        public let name: String
        /// nil: a switch; else the placeholder of its value ("a FILE").
        public let value: String?
        public init(_ name: String, value: String? = nil) {
            self.name = name
            self.value = value
        }
    }

    /// The words a switch takes as its value, on the command line and in the file.
    public static let switchWords = ["yes", "no", "true", "false", "on", "off"]
    static let allowedSwitchText = "yes, no, true, false, on or off"

    /// - Parameters:
    ///   - aliases: other names of settings, as alias -> setting name (`aud` -> `credential-audience`).
    ///   - local: the command's own options.
    ///   - positionals: whether arguments that are not options are taken (else they are an error).
    ///   - command: the command, for "see scangate COMMAND --help".
    public static func parse(_ arguments: [String], table: [OptionSpec] = OptionTable.all, aliases: [String: String] = [:],
                             local: [LocalOption] = [], positionals: Bool = false,
                             command: String = "run") throws(UsageError) -> Result {
        var result = Result()
        var i = 0
        // The switch just read without a value (`--fast`), so that `--fast maybe` says what a switch takes.
        var bareSwitch: String?
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            let previousSwitch = bareSwitch
            bareSwitch = nil
            if arg == "-h" || arg == "--help" { result.help = true; continue }
            guard arg.hasPrefix("--"), arg.count > 2 else {
                if positionals { result.positionals.append(arg); continue }
                if let previousSwitch {
                    throw UsageError("\(previousSwitch): '\(arg)' is not \(allowedSwitchText)")
                }
                throw UsageError("unexpected argument '\(arg)' (options start with --; see scangate \(command) --help)")
            }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            /// The next argument when it is a switch word (`--X no`), consumed.
            func switchWord() -> String? {
                guard i < arguments.count, switchWords.contains(arguments[i].lowercased()) else { return nil }
                i += 1
                return arguments[i - 1]
            }
            /// A switch's value: "true"/"false", or an error naming the flag and the allowed words.
            func switchValue(_ flag: String, negated: Bool) throws(UsageError) -> String {
                if negated {
                    guard inlineValue == nil else {
                        throw UsageError("\(flag) takes no value (write --\(name.dropFirst(3))=no or \(flag))")
                    }
                    return "false"
                }
                guard let word = inlineValue ?? switchWord() else {
                    bareSwitch = flag
                    return "true"
                }
                // The file's parser: the same words (and 1 or 0, as the file has always taken).
                guard let on = try? ParseValue.bool(word) else {
                    throw UsageError("\(flag): '\(word)' is not \(allowedSwitchText)")
                }
                return on ? "true" : "false"
            }
            func value(_ flag: String, _ placeholder: String) throws(UsageError) -> String {
                if let inlineValue { return inlineValue }
                guard i < arguments.count else { throw UsageError("\(flag) needs a value (\(placeholder))") }
                i += 1
                return arguments[i - 1]
            }
            if name == "config" {
                result.configPath = try value("--config", "FILE")
                continue
            }
            if let own = local.first(where: { $0.name == name }) {
                if let placeholder = own.value {
                    result.local.append((name, try value("--" + name, placeholder)))
                } else {
                    result.local.append((name, try switchValue("--" + name, negated: false)))
                }
                continue
            }
            if name.hasPrefix("no-"), let own = local.first(where: { $0.name == String(name.dropFirst(3)) }), own.value == nil {
                result.local.append((own.name, try switchValue("--" + name, negated: true)))
                continue
            }
            func lookup(_ n: String) -> OptionSpec? {
                let canonical = aliases[n] ?? n
                return table.first { $0.name == canonical }
            }
            var negated = false
            var spec = lookup(name)
            if spec == nil, name.hasPrefix("no-"), let s = lookup(String(name.dropFirst(3))), s.kind == .flag {
                spec = s
                negated = true
            }
            guard let option = spec else {
                throw UsageError("unknown option '--\(name)' (see scangate \(command) --help)")
            }
            let typedName = negated ? String(name.dropFirst(3)) : name
            if typedName != option.name { result.spelling[option.name] = "--" + typedName } else { result.spelling[option.name] = nil }
            let v: String
            switch option.kind {
            case .flag: v = try switchValue("--" + name, negated: negated)
            case .value(let placeholder): v = try value("--" + name, placeholder)
            }
            result.assignments.append((option, v))
        }
        return result
    }

    /// Applies assignments in order; a bad value is reported as "--name: what is wrong".
    public static func apply(_ assignments: [(OptionSpec, String)], to settings: inout RunSettings) throws(UsageError) {
        for (option, value) in assignments {
            do {
                try option.apply(&settings, value)
            } catch {
                throw UsageError("--\(option.name): \(error)")
            }
        }
    }

    /// How switches are written, for each command's --help.
    public static let switchHelp = "Switches take --NAME, --no-NAME, --NAME=yes|no or --NAME yes|no (also true/false, on/off)."

    /// The options section of `scangate run --help`, grouped by config section.
    public static func helpText(table: [OptionSpec] = OptionTable.all) -> String {
        var lines: [String] = []
        for section in OptionTable.sections(of: table) {
            let options = table.filter { $0.section == section }
            guard !options.isEmpty else { continue }
            lines.append("  [\(section.rawValue)]")
            for o in options {
                var head = "    --\(o.name)"
                if case .value(let p) = o.kind { head += " \(p)" }
                let pad = max(1, 34 - head.count)
                var line = head + String(repeating: " ", count: pad) + o.help
                if !o.defaultText.isEmpty { line += " (default \(o.defaultText))" }
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}

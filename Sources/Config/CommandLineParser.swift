import Core
import Settings

/// Parses `scangate run` flags against the option table. Every error names the flag and says what is allowed.
public struct CommandLineParser {
    public struct Result: Sendable {
        /// Options given on the command line, in order, as (option, value): applied over the config file.
        public var assignments: [(OptionSpec, String)] = []
        public var configPath: String?
        public var help = false
    }

    public static func parse(_ arguments: [String], table: [OptionSpec] = OptionTable.all) throws(UsageError) -> Result {
        var result = Result()
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if arg == "-h" || arg == "--help" { result.help = true; continue }
            guard arg.hasPrefix("--"), arg.count > 2 else {
                throw UsageError("unexpected argument '\(arg)' (options start with --; see --help)")
            }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if name == "config" {
                guard let v = inlineValue ?? (i < arguments.count ? arguments[i] : nil) else {
                    throw UsageError("--config needs a FILE")
                }
                if inlineValue == nil { i += 1 }
                result.configPath = v
                continue
            }
            var negated = false
            var spec = table.first { $0.name == name }
            if spec == nil, name.hasPrefix("no-"), let s = table.first(where: { $0.name == String(name.dropFirst(3)) }),
               s.kind == .flag {
                spec = s
                negated = true
            }
            guard let option = spec else {
                throw UsageError("unknown option --\(name) (see scangate run --help)")
            }
            let value: String
            switch option.kind {
            case .flag:
                if negated {
                    value = "false"
                } else {
                    value = inlineValue ?? "true"
                }
            case .value(let placeholder):
                if let v = inlineValue {
                    value = v
                } else {
                    guard i < arguments.count else { throw UsageError("--\(name) needs a value (\(placeholder))") }
                    value = arguments[i]
                    i += 1
                }
            }
            result.assignments.append((option, value))
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

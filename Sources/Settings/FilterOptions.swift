import Core

extension OptionTable {
    public static let filter: [OptionSpec] = [
        OptionSpec("min-length", .filter, .value(placeholder: "BYTES"), default: "0",
                   help: "reject codes shorter than this",
                   apply: { s, v in s.filter.minLength = try ParseValue.int(v, in: 0...7089) },
                   show: { String($0.filter.minLength) }),
        OptionSpec("max-length", .filter, .value(placeholder: "BYTES"), default: "0",
                   help: "reject codes longer than this (0: no limit)",
                   apply: { s, v in s.filter.maxLength = try ParseValue.int(v, in: 0...7089) },
                   show: { String($0.filter.maxLength) }),
        OptionSpec("allowed-chars", .filter, .value(placeholder: "CLASS"), default: "any",
                   help: "reject codes with other characters: any, text (UTF-8, no control chars), printable (ASCII), alnum, digits",
                   apply: { s, v in
                       s.filter.characters = try ParseValue.choice(v, FilterSettings.Characters.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.filter.characters.rawValue }),
        OptionSpec("allow-prefix", .filter, .value(placeholder: "LIST"), default: "",
                   help: "accept only codes starting with one of these comma-separated prefixes",
                   apply: { s, v in s.filter.allowPrefixes = ParseValue.list(v) },
                   show: { $0.filter.allowPrefixes.joined(separator: ",") }),
        OptionSpec("allow-regex", .filter, .value(placeholder: "REGEX"), default: "",
                   help: "accept only codes whose whole text matches this regular expression",
                   apply: { s, v in
                       if v.isEmpty { s.filter.allowRegex = nil; return }
                       do { _ = try Regex(v) } catch {
                           throw OptionValueError("'\(v)' is not a valid regular expression")
                       }
                       s.filter.allowRegex = v
                   },
                   show: { $0.filter.allowRegex ?? "" }),
    ]
}

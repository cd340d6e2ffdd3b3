import Core

extension OptionTable {
    public static let output: [OptionSpec] = [
        OptionSpec("output", .output, .value(placeholder: "FORMAT"), default: "json",
                   help: "stdout format: json (one object per line), text (zbarcam's TYPE:data), none",
                   apply: { s, v in
                       s.output.format = try ParseValue.choice(v, OutputFormat.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.output.format.rawValue }),
        OptionSpec("oneshot", .output, .flag, default: "false",
                   help: "exit 0 after the first reported code",
                   apply: { s, v in s.oneshot = try ParseValue.bool(v) },
                   show: { String($0.oneshot) }),
    ]
}

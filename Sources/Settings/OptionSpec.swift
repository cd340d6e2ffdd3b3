import Core

/// One setting of `scangate run`: the same name on the command line (`--serial-baud 9600`) and in the
/// INI file (`[serial]` / `serial-baud = 9600`). Every setting is described once, here.
public struct OptionSpec: Sendable {
    public enum Kind: Sendable, Equatable {
        /// Takes a value: `--name VALUE` or `--name=VALUE`.
        case value(placeholder: String)
        /// A switch: `--name`, `--no-name`, `--name=yes|no` or `--name yes|no` on the command line (also
        /// true/false, on/off); `name = yes|no|true|false|on|off` in the file.
        case flag
    }

    public let name: String
    public let section: ConfigSection
    public let kind: Kind
    public let help: String
    /// The default, as shown in --help, check-config and deploy/scangate.conf.
    public let defaultText: String
    /// Repeatable options accumulate (`--camera-control a=1 --camera-control b=2`).
    public let repeatable: Bool
    /// Applies a textual value ("true"/"false" for switches) to the settings; throws a message that
    /// says what is allowed (the caller adds where the value came from).
    public let apply: @Sendable (inout RunSettings, String) throws -> Void
    /// Reads the current value back as text, for check-config.
    public let show: @Sendable (RunSettings) -> String

    public init(_ name: String, _ section: ConfigSection, _ kind: Kind, default defaultText: String,
                repeatable: Bool = false, help: String,
                apply: @escaping @Sendable (inout RunSettings, String) throws -> Void,
                show: @escaping @Sendable (RunSettings) -> String) {
        self.name = name
        self.section = section
        self.kind = kind
        self.help = help
        self.defaultText = defaultText
        self.repeatable = repeatable
        self.apply = apply
        self.show = show
    }
}

/// A value that does not fit an option; the parser prefixes where it came from.
public struct OptionValueError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Parsers shared by all option tables; each error says what is allowed.
public enum ParseValue {
    public static func int(_ text: String, in range: ClosedRange<Int>) throws -> Int {
        guard let v = Int(text.trimmingSpaces), range.contains(v) else {
            throw OptionValueError("'\(text)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return v
    }

    public static func double(_ text: String, in range: ClosedRange<Double>) throws -> Double {
        guard let v = Double(text.trimmingSpaces), v.isFinite, range.contains(v) else {
            throw OptionValueError("'\(text)' is not a number from \(format(range.lowerBound)) to \(format(range.upperBound))")
        }
        return v
    }

    public static func bool(_ text: String) throws -> Bool {
        switch text.trimmingSpaces.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw OptionValueError("'\(text)' is not yes, no, true, false, on or off")
        }
    }

    public static func choice<T>(_ text: String, _ choices: [(String, T)]) throws -> T {
        let t = text.trimmingSpaces.lowercased()
        if let hit = choices.first(where: { $0.0 == t }) { return hit.1 }
        throw OptionValueError("'\(text)' is not one of \(choices.map(\.0).joined(separator: ", "))")
    }

    /// A comma-separated list with empty items removed.
    public static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
    }

    static func format(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
    }
}

extension String {
    public var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}

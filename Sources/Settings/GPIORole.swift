/// What a GPIO line is used for. Each role is driven by at most one line request.
public enum GPIORole: String, CaseIterable, Sendable, Hashable, Comparable {
    case green, red, status, buzzer

    /// The flag that names the role's line.
    public var flag: String {
        switch self {
        case .green: return "--led-green"
        case .red: return "--led-red"
        case .status: return "--status-led"
        case .buzzer: return "--buzzer"
        }
    }

    /// For log lines and errors: "green LED".
    public var title: String {
        switch self {
        case .green: return "green LED"
        case .red: return "red LED"
        case .status: return "status LED"
        case .buzzer: return "buzzer"
        }
    }

    /// green, red, status, buzzer: the order lines are requested, driven and released in.
    private var order: Int {
        switch self {
        case .green: return 0
        case .red: return 1
        case .status: return 2
        case .buzzer: return 3
        }
    }

    public static func < (a: GPIORole, b: GPIORole) -> Bool { a.order < b.order }

    /// Parses a `--gpio-active-low` list item: green, red, status, buzzer.
    public init?(name: String) {
        switch name.lowercased() {
        case "green", "led-green", "green-led": self = .green
        case "red", "led-red", "red-led": self = .red
        case "status", "status-led": self = .status
        case "buzzer": self = .buzzer
        default: return nil
        }
    }
}

/// How a role's line is named on the command line: an offset on the chip ("17") or a line name ("GPIO17").
public enum GPIOLineSpec: Equatable, Sendable, CustomStringConvertible {
    case offset(Int)
    case name(String)

    /// "17" is an offset, anything else (without spaces) a line name; nil for empty or spaced text.
    public static func parse(_ text: String) -> GPIOLineSpec? {
        let t = text.trimmingCharacters(in: [" ", "\t"])
        guard !t.isEmpty else { return nil }
        if t.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard let n = Int(t), n <= 65535 else { return nil }
            return .offset(n)
        }
        guard !t.contains(where: { $0.isWhitespace || $0.isNewline }) else { return nil }
        return .name(t)
    }

    public var description: String {
        switch self {
        case .offset(let n): return String(n)
        case .name(let s): return s
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

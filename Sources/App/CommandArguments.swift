import Config
import Core
import Settings

/// The arguments of one tool command (decode-image, make-code, render, bench, soak), read front to
/// back. Each command keeps its own `switch` over the flags; this holds what each of them did by hand:
/// taking a flag's value and checking a number with `run`'s own parsers (ParseValue), so the errors
/// are worded as `run`'s are: "--scale: '0' is not a whole number from 1 to 64".
struct CommandArguments {
    private let arguments: [String]
    private var index = 0

    init(_ arguments: [String]) { self.arguments = arguments }

    /// The next argument, or nil when all are read.
    mutating func next() -> String? {
        guard index < arguments.count else { return nil }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value after `flag`: "FLAG needs WHAT" when there is none.
    mutating func value(_ flag: String, _ what: String) throws(UsageError) -> String {
        guard let value = next() else { throw UsageError("\(flag) needs \(what)") }
        return value
    }

    /// A whole number in `range` after `flag`.
    mutating func number(_ flag: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        let text = try value(flag, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        return try Self.parsed(flag) { try ParseValue.int(text, in: range) }
    }

    /// A decimal number in `range` after `flag`.
    mutating func decimal(_ flag: String, _ range: ClosedRange<Double>) throws(UsageError) -> Double {
        let text = try value(flag, "a number from \(range.lowerBound) to \(range.upperBound)")
        return try Self.parsed(flag) { try ParseValue.double(text, in: range) }
    }

    private static func parsed<T>(_ flag: String, _ parse: () throws -> T) throws(UsageError) -> T {
        do { return try parse() } catch { throw UsageError("\(flag): \(error)") }
    }
}

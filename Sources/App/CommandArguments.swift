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

    /// Whether `arg` is the switch `name` as `run` spells switches: `--NAME`, `--no-NAME`, `--NAME=WORD` or
    /// `--NAME WORD` (WORD yes, no, true, false, on, off; the next argument is taken only when it is one).
    /// nil when `arg` is another argument; else the switch's value.
    mutating func switchValue(_ arg: String, _ name: String) throws(UsageError) -> Bool? {
        if arg == "--no-" + name { return false }
        if arg.hasPrefix("--no-" + name + "=") { throw UsageError("--no-\(name) takes no value (write --\(name)=no or --no-\(name))") }
        let word: String
        if arg == "--" + name {
            guard index < arguments.count, CommandLineParser.switchWords.contains(arguments[index].lowercased()) else { return true }
            word = arguments[index]
            index += 1
        } else if arg.hasPrefix("--" + name + "=") {
            word = String(arg.dropFirst(name.count + 3))
        } else {
            return nil
        }
        guard let on = try? ParseValue.bool(word) else {
            throw UsageError("--\(name): '\(word)' is not yes, no, true, false, on or off")
        }
        return on
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

extension CommandArguments {
    /// `scangate COMMAND SUB ...` (credential, policy): runs the subcommand the first argument names with
    /// the rest, prints `help` for -h, --help or help, and says in one line what is allowed otherwise (exit 2).
    static func dispatch(_ arguments: [String], command: String, help: String,
                         _ subcommands: [(name: String, run: ([String]) -> Int32)]) -> Int32 {
        let names = subcommands.map(\.name)
        guard let sub = arguments.first else {
            let spelled = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "") : names.joined()
            return usageError("\(command) needs \(spelled) (see scangate \(command) --help)")
        }
        if sub == "-h" || sub == "--help" || sub == "help" {
            print(help)
            return ExitCode.success.rawValue
        }
        guard let found = subcommands.first(where: { $0.name == sub }) else {
            return usageError("\(command): unknown subcommand '\(sub)' (\(names.joined(separator: ", ")))")
        }
        return found.run(Array(arguments.dropFirst()))
    }
}

/// Bad input from the user (flag, value, file, config): one clear line on stderr and exit 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Exit codes used by every command.
public enum ExitCode: Int32, Sendable {
    case success = 0
    /// The command ran and the answer is no: decode-image found nothing, doctor's camera failed, status
    /// found no daemon, credential verify refused the pass, bench or soak missed a target.
    case nothingFound = 1
    /// Bad flag, value, file or config.
    case usage = 2
    /// The daemon could not run (an essential device failed at start).
    case failure = 3
}

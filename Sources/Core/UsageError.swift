/// Bad input from the user (flag, value, file, config): one clear line on stderr and exit 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Exit codes used by every command.
public enum ExitCode: Int32, Sendable {
    case success = 0
    /// decode-image found nothing; doctor: the camera failed.
    case nothingFound = 1
    /// Bad flag, value, file or config.
    case usage = 2
    /// The daemon could not run (an essential device failed at start).
    case failure = 3
}

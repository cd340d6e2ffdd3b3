import Platform

/// Why a GPIO chip or line could not be used. `message` is the one line that is logged (and that
/// `scangate doctor` shows); it names the flag, the chip and the line, and says what is there instead.
public struct GPIOError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// No chip matches --gpio-chip.
        case chipNotFound
        /// The chip exists but could not be opened (permissions, driver error).
        case chipUnavailable
        /// No line of that name, or an offset past the chip's last line.
        case lineNotFound
        /// Another consumer holds the line (EBUSY).
        case lineBusy
        /// The line request or a value change failed for another reason.
        case lineFailed
        /// Two roles name the same line.
        case lineConflict
    }

    public let kind: Kind
    public let message: String
    /// The errno behind the failure, when there was one.
    public let errno: Errno?

    public init(_ kind: Kind, _ message: String, errno: Errno? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    public var description: String { message }

    /// The chip device went away (driver unloaded, board unplugged): close everything and reopen later.
    public var meansChipGone: Bool { errno?.meansDeviceGone ?? false }
}

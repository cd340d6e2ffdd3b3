#if canImport(Glibc)
import Glibc
#endif

/// An errno value that is itself the error, after apple/swift-system.
public struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current errno.
    public static var current: Errno { Errno(rawValue: errno) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noDevice = Errno(rawValue: ENODEV)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let ioError = Errno(rawValue: EIO)
    public static let busy = Errno(rawValue: EBUSY)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)

    /// "No such device (ENODEV)".
    public var description: String {
        let name = Errno.names[rawValue].map { " (\($0))" } ?? " (errno \(rawValue))"
        return String(cString: strerror(rawValue)) + name
    }

    /// True when the error means the device itself went away (unplugged, driver unloaded).
    public var meansDeviceGone: Bool {
        self == .noDevice || self == .noSuchFile || self == .ioError || rawValue == ENXIO || rawValue == ENOTTY
    }

    private static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", ENXIO: "ENXIO", EBADF: "EBADF",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EBUSY: "EBUSY", ENODEV: "ENODEV",
        EINVAL: "EINVAL", ENOTTY: "ENOTTY", ENOSPC: "ENOSPC", EPIPE: "EPIPE", ETIMEDOUT: "ETIMEDOUT",
        EEXIST: "EEXIST", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", ENOSYS: "ENOSYS", EDQUOT: "EDQUOT",
    ]
}

/// Retries a raw call while it fails with EINTR; the one place EINTR is handled.
/// `call` returns the raw result; -1 means failure with errno set.
@inlinable
public func retryOnInterrupt<T: FixedWidthInteger>(_ call: () -> T) -> Result<T, Errno> {
    while true {
        let result = call()
        if result != -1 { return .success(result) }
        let error = Errno.current
        if error != .interrupted { return .failure(error) }
    }
}

/// An errno with the operation and the object it was about: "open /dev/ttyUSB0: No such file (ENOENT)".
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let subject: String
    public let errno: Errno

    public init(_ operation: String, _ subject: String, _ errno: Errno) {
        self.operation = operation
        self.subject = subject
        self.errno = errno
    }

    public var description: String { "\(operation) \(subject): \(errno)" }
}

extension Result where Failure == Errno {
    /// Turns an errno failure into a SystemError naming the operation and its subject.
    @inlinable
    public func get(_ operation: String, _ subject: String) throws(SystemError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let error): throw SystemError(operation, subject, error)
        }
    }
}

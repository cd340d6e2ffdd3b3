#if canImport(Glibc)
import Glibc
#endif

/// A standard termios line speed from 1200 to 921600 baud. Non-standard rates (which would need
/// BOTHER/termios2) are refused.
public struct SerialBaudRate: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let bitsPerSecond: Int
    /// The termios `Bnnnn` constant.
    /// The termios speed constant (B9600, ...).
    public let speed: speed_t

    private static let table: [(Int, speed_t)] = [
        (1200, speed_t(B1200)), (1800, speed_t(B1800)), (2400, speed_t(B2400)), (4800, speed_t(B4800)),
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115200, speed_t(B115200)), (230400, speed_t(B230400)),
        (460800, speed_t(B460800)), (500000, speed_t(B500000)), (576000, speed_t(B576000)),
        (921600, speed_t(B921600)),
    ]

    /// "1200, 1800, 2400, ..., 921600", for error messages and --help.
    public static var allowedText: String { table.map { String($0.0) }.joined(separator: ", ") }

    public init?(_ bitsPerSecond: Int) {
        guard let hit = SerialBaudRate.table.first(where: { $0.0 == bitsPerSecond }) else { return nil }
        self.bitsPerSecond = hit.0
        self.speed = hit.1
    }

    /// The rate a termios speed constant stands for (nil for a rate outside the table).
    public static func bitsPerSecond(forSpeed speed: speed_t) -> Int? {
        table.first(where: { $0.1 == speed })?.0
    }

    public static let default9600 = SerialBaudRate(9600)!

    public var description: String { String(bitsPerSecond) }
}

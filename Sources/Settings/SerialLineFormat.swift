/// Character format of the line: data bits, parity and stop bits, written like "8N1" or "7E1".
public struct SerialLineFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Parity: Character, Sendable, CaseIterable {
        case none = "N", even = "E", odd = "O"
    }

    /// 5, 6, 7 or 8.
    public let dataBits: Int
    public let parity: Parity
    /// 1 or 2.
    public let stopBits: Int

    public static let allowedText = "DATA BITS 5-8, PARITY N|E|O, STOP BITS 1|2, e.g. 8N1, 7E1, 8E1, 8O1, 7O1, 7N1, 8N2"

    public init?(dataBits: Int, parity: Parity, stopBits: Int) {
        guard (5...8).contains(dataBits), stopBits == 1 || stopBits == 2 else { return nil }
        self.dataBits = dataBits
        self.parity = parity
        self.stopBits = stopBits
    }

    /// Parses "8N1", "7e1", ... (case-insensitive).
    public init?(_ text: String) {
        let chars = Array(text.uppercased())
        guard chars.count == 3,
              let data = chars[0].wholeNumberValue,
              let parity = Parity(rawValue: chars[1]),
              let stop = chars[2].wholeNumberValue else { return nil }
        self.init(dataBits: data, parity: parity, stopBits: stop)
    }

    public static let eightNoneOne = SerialLineFormat(dataBits: 8, parity: .none, stopBits: 1)!

    /// "8N1".
    public var description: String { "\(dataBits)\(parity.rawValue)\(stopBits)" }

    /// Bits on the wire per character (start + data + parity + stop), for transmit-time estimates.
    public var bitsPerCharacter: Int { 1 + dataBits + (parity == .none ? 0 : 1) + stopBits }

    /// Bytes from 0 up to this bound survive the line unchanged; higher bytes lose their top bits
    /// (a 7-bit line turns 0x82 into STX), so they are unsafe in a frame.
    public var byteLimit: Int { 1 << dataBits }
}

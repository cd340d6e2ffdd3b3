import Platform
import Settings

/// Applies an `UnsafeBytePolicy` to a text payload.
///
/// Unsafe are: C0 control bytes 0x00–0x1F and DEL 0x7F (CR, LF, STX, ETX, NUL, ESC, ...); every byte that
/// occurs in the configured prefix or suffix; bytes the line cannot carry (0x80 and up on a 7-bit line,
/// which would arrive with the top bit cut off, 0x82 turning into STX); and the bytes of invalid UTF-8.
/// Hex payloads need none of this: they are made of 0-9 and A-F only.
struct PayloadSanitizer: Sendable {
    /// unsafe[b] is true for bytes that may not appear in a frame body as they are.
    private let delimiter: [Bool]
    /// Bytes from this value up do not fit the line's data bits.
    private let byteLimit: Int
    let policy: UnsafeBytePolicy

    init(policy: UnsafeBytePolicy, delimiterBytes: [UInt8], byteLimit: Int) {
        var table = [Bool](repeating: false, count: 256)
        for b in delimiterBytes { table[Int(b)] = true }
        self.delimiter = table
        self.byteLimit = byteLimit
        self.policy = policy
    }

    /// Why a byte is unsafe, or nil when it may be sent as it is (for bytes of a valid UTF-8 sequence).
    private func problem(_ b: UInt8) -> String? {
        if b < 0x20 || b == 0x7F { return "control byte" }
        if delimiter[Int(b)] { return "byte of the frame's prefix/suffix" }
        if Int(b) >= byteLimit { return "byte that does not fit the line's data bits" }
        return nil
    }

    /// The sanitized payload, or the reason the payload is rejected (policy `reject`).
    func apply(_ payload: [UInt8]) throws(SerialPayloadRejection) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count)
        var i = 0
        while i < payload.count {
            let length = UTF8Sequence.validLength(payload, at: i)
            let sequence = payload[i..<(i + max(length, 1))]
            var reason: String? = length == 0 ? "invalid UTF-8" : nil
            var at = i
            for (k, b) in sequence.enumerated() where reason == nil {
                if let p = problem(b) { reason = p; at = i + k }
            }
            if let reason {
                switch policy {
                case .reject:
                    throw SerialPayloadRejection("payload has \(reason) 0x\(hex(payload[at])) at offset \(at)")
                case .strip:
                    break
                case .escape:
                    for b in sequence { out += Array("\\x".utf8) + Hex.encode([b]) }
                }
            } else if policy == .escape && sequence.first == 0x5C {
                out += [0x5C, 0x5C]
            } else {
                out += sequence
            }
            i += sequence.count
        }
        return out
    }

    private func hex(_ b: UInt8) -> String { String(decoding: Hex.encode([b]), as: UTF8.self) }
}

/// UTF-8 well-formedness (RFC 3629, Unicode table 3-7): no overlongs, no surrogates, nothing above U+10FFFF.
enum UTF8Sequence {
    /// Length (1–4) of the well-formed sequence starting at `i`, or 0 if the byte there does not start one.
    static func validLength(_ bytes: [UInt8], at i: Int) -> Int {
        let b0 = bytes[i]
        func continuation(_ k: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            i + k < bytes.count && range.contains(bytes[i + k])
        }
        switch b0 {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return continuation(1) ? 2 : 0
        case 0xE0: return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : 0
        case 0xED: return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : 0
        case 0xF0: return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4: return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default: return 0
        }
    }
}

/// Why a code is not sent on the serial line; logged and carried in the event's verdict.
public struct SerialPayloadRejection: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

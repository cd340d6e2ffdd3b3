import Core

/// A CBOR data item (RFC 8949), in the subset COSE and CWT use, read from untrusted bytes.
///
/// Hand-written rather than libcbor's `cbor_load`: libcbor 0.8 allocates an array or map for the element
/// count its header declares before reading any element (a 5-byte input asks for gigabytes; PJK/libcbor
/// #418, #428, #431, closed as the caller's problem, with a global `cbor_set_allocs` cap as the only
/// remedy), grows its decoder stack on long tag chains (#124), and neither refuses duplicate map keys nor
/// indefinite lengths. Here every declared count is checked against the bytes that remain, nesting and
/// the item count are bounded, and duplicate keys, indefinite lengths, reserved encodings, non-UTF-8
/// text and trailing bytes are refused.
public indirect enum CBORValue: Equatable, Sendable {
    case unsigned(UInt64)
    /// The value -1 - n (major type 1).
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    case map(CBORMap)
    case tagged(UInt64, CBORValue)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    /// The integer, when it is one that fits Int64.
    public var int64: Int64? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): return n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: return nil
        }
    }

    public var bytesValue: [UInt8]? { if case .bytes(let b) = self { return b } else { return nil } }
    public var textValue: String? { if case .text(let t) = self { return t } else { return nil } }
    public var arrayValue: [CBORValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var mapValue: CBORMap? { if case .map(let m) = self { return m } else { return nil } }

    public static func int(_ v: Int64) -> CBORValue { v >= 0 ? .unsigned(UInt64(v)) : .negative(UInt64(-(v + 1))) }

    /// Text compared byte for byte, as CBOR encodes it (RFC 8949 §5.6: map keys are equal when their
    /// encodings are), not by Unicode canonical equivalence as Swift's `String ==`: the text key
    /// "\u{212A}1" (KELVIN SIGN) is not "K1". Floats as Double's `==` (NaN is equal to nothing).
    public static func == (a: CBORValue, b: CBORValue) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)): return x == y
        case (.negative(let x), .negative(let y)): return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.text(let x), .text(let y)): return x.bytesEqual(y)
        case (.array(let x), .array(let y)): return x == y
        case (.map(let x), .map(let y)): return x == y
        case (.tagged(let t, let x), .tagged(let u, let y)): return t == u && x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null), (.undefined, .undefined): return true
        case (.float(let x), .float(let y)): return x == y
        default: return false
        }
    }
}

/// A CBOR map's entries in the order read; keys are integers or text, and unique (text by its bytes).
public struct CBORMap: Equatable, Sendable {
    public private(set) var entries: [(key: CBORValue, value: CBORValue)]

    public init() { entries = [] }

    /// Builds from pairs; nil when a key repeats.
    public init?(_ pairs: [(CBORValue, CBORValue)]) {
        entries = []
        for (k, v) in pairs {
            guard self[k] == nil else { return nil }
            entries.append((k, v))
        }
    }

    public subscript(key: CBORValue) -> CBORValue? { entries.first { $0.key == key }?.value }
    public subscript(label: Int64) -> CBORValue? { self[.int(label)] }
    public subscript(text: String) -> CBORValue? { self[.text(text)] }

    public var count: Int { entries.count }

    public static func == (a: CBORMap, b: CBORMap) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Why bytes are not acceptable CBOR: the byte offset and what was wrong there.
public struct CBORError: Error, Equatable, CustomStringConvertible, Sendable {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid CBOR at byte \(offset): \(reason)" }
}

extension CBORValue {
    /// Decodes exactly one item from `bytes` (nothing may follow it).
    /// - Parameters:
    ///   - maxDepth: arrays, maps and tags nested deeper are refused (the decoder recurses once per level).
    ///   - maxItems: more data items in all are refused.
    public static func decode(_ bytes: [UInt8], maxBytes: Int = 4096, maxDepth: Int = 8,
                              maxItems: Int = 512) throws(CBORError) -> CBORValue {
        guard bytes.count <= maxBytes else {
            throw CBORError(offset: 0, reason: "\(bytes.count) bytes is more than the limit of \(maxBytes)")
        }
        var reader = CBORReader(bytes: bytes, maxDepth: maxDepth, maxItems: maxItems)
        let value = try reader.item(depth: 0)
        guard reader.i == bytes.count else {
            throw CBORError(offset: reader.i, reason: "\(bytes.count - reader.i) bytes after the item")
        }
        return value
    }

    /// The encoding this program writes: definite lengths, shortest integer arguments (RFC 8949 §4.2.1).
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        CBORWriter.write(self, into: &out)
        return out
    }
}

private struct CBORReader {
    let bytes: [UInt8]
    let maxDepth: Int
    let maxItems: Int
    var i = 0
    var items = 0

    init(bytes: [UInt8], maxDepth: Int, maxItems: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxItems = maxItems
    }

    func fail(_ reason: String, at offset: Int? = nil) -> CBORError { CBORError(offset: offset ?? i, reason: reason) }

    var remaining: Int { bytes.count - i }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard i < bytes.count else { throw fail("unexpected end of input") }
        defer { i += 1 }
        return bytes[i]
    }

    mutating func take(_ n: Int) throws(CBORError) -> [UInt8] {
        guard n <= remaining else { throw fail("a string of \(n) bytes, but \(remaining) remain") }
        defer { i += n }
        return Array(bytes[i..<(i + n)])
    }

    /// The argument of an initial byte (additional information 0-27). 28-30 are reserved and 31 (an
    /// indefinite length, or a break) is not accepted.
    mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
        switch info {
        case 0...23: return UInt64(info)
        case 24: return UInt64(try byte())
        case 25, 26, 27:
            let count = 1 << (Int(info) - 24)
            var v: UInt64 = 0
            for _ in 0..<count { v = v << 8 | UInt64(try byte()) }
            return v
        case 31: throw fail("indefinite-length items are not accepted", at: start)
        default: throw fail("reserved additional information \(info)", at: start)
        }
    }

    /// A declared count that cannot be met by the bytes that remain is refused before anything is
    /// allocated (each element takes at least `minimumBytes`).
    func checkCount(_ n: UInt64, minimumBytes: Int, what: String, at start: Int) throws(CBORError) -> Int {
        guard n <= UInt64(remaining / minimumBytes) else {
            throw fail("\(what) of \(n) elements, but only \(remaining) bytes remain", at: start)
        }
        return Int(n)
    }

    mutating func item(depth: Int) throws(CBORError) -> CBORValue {
        let start = i
        items += 1
        guard items <= maxItems else { throw fail("more than \(maxItems) data items") }
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1F
        switch major {
        case 0: return .unsigned(try argument(info, at: start))
        case 1: return .negative(try argument(info, at: start))
        case 2:
            let n = try argument(info, at: start)
            guard n <= UInt64(remaining) else { throw fail("a byte string of \(n) bytes, but \(remaining) remain", at: start) }
            return .bytes(try take(Int(n)))
        case 3:
            let n = try argument(info, at: start)
            guard n <= UInt64(remaining) else { throw fail("a text string of \(n) bytes, but \(remaining) remain", at: start) }
            let raw = try take(Int(n))
            guard let text = String(validating: raw, as: UTF8.self) else { throw fail("a text string is not valid UTF-8", at: start) }
            return .text(text)
        case 4:
            guard depth < maxDepth else { throw fail("nested deeper than \(maxDepth) levels", at: start) }
            let n = try checkCount(try argument(info, at: start), minimumBytes: 1, what: "an array", at: start)
            var elements: [CBORValue] = []
            elements.reserveCapacity(n)
            for _ in 0..<n { elements.append(try item(depth: depth + 1)) }
            return .array(elements)
        case 5:
            guard depth < maxDepth else { throw fail("nested deeper than \(maxDepth) levels", at: start) }
            let n = try checkCount(try argument(info, at: start), minimumBytes: 2, what: "a map", at: start)
            var map = CBORMap()
            var pairs: [(CBORValue, CBORValue)] = []
            pairs.reserveCapacity(n)
            for _ in 0..<n {
                let keyOffset = i
                let key = try item(depth: depth + 1)
                switch key {
                case .unsigned, .negative, .text: break
                default: throw fail("a map key must be an integer or a text string", at: keyOffset)
                }
                guard !pairs.contains(where: { $0.0 == key }) else { throw fail("a map key appears twice", at: keyOffset) }
                pairs.append((key, try item(depth: depth + 1)))
            }
            map = CBORMap(pairs) ?? map
            return .map(map)
        case 6:
            guard depth < maxDepth else { throw fail("nested deeper than \(maxDepth) levels", at: start) }
            let tag = try argument(info, at: start)
            return .tagged(tag, try item(depth: depth + 1))
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 25:
                let half = UInt16(try byte()) << 8 | UInt16(try byte())
                return .float(Self.halfToDouble(half))
            case 26:
                var v: UInt32 = 0
                for _ in 0..<4 { v = v << 8 | UInt32(try byte()) }
                return .float(Double(Float(bitPattern: v)))
            case 27:
                var v: UInt64 = 0
                for _ in 0..<8 { v = v << 8 | UInt64(try byte()) }
                return .float(Double(bitPattern: v))
            case 31: throw fail("a break outside an indefinite-length item", at: start)
            default: throw fail("simple value \(info) is not accepted", at: start)
            }
        }
    }

    /// IEEE 754 binary16 (RFC 8949 Appendix D).
    static func halfToDouble(_ half: UInt16) -> Double {
        let exponent = Int(half >> 10) & 0x1F
        let mantissa = Double(half & 0x3FF)
        let magnitude: Double
        if exponent == 0 {
            magnitude = mantissa * 0x1p-24
        } else if exponent == 31 {
            magnitude = mantissa == 0 ? .infinity : .nan
        } else {
            var scale = 1.0
            if exponent >= 25 {
                for _ in 0..<(exponent - 25) { scale *= 2 }
            } else {
                for _ in 0..<(25 - exponent) { scale /= 2 }
            }
            magnitude = (mantissa + 1024) * scale
        }
        return half & 0x8000 != 0 ? -magnitude : magnitude
    }
}

private enum CBORWriter {
    static func head(_ major: UInt8, _ argument: UInt64, into out: inout [UInt8]) {
        let m = major << 5
        switch argument {
        case 0...23: out.append(m | UInt8(argument))
        case 24...0xFF: out += [m | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [m | 25, UInt8(argument >> 8), UInt8(argument & 0xFF)]
        case 0x10000...0xFFFF_FFFF:
            out.append(m | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift))) }
        default:
            out.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift))) }
        }
    }

    static func write(_ value: CBORValue, into out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): head(0, n, into: &out)
        case .negative(let n): head(1, n, into: &out)
        case .bytes(let b): head(2, UInt64(b.count), into: &out); out += b
        case .text(let t): let u = Array(t.utf8); head(3, UInt64(u.count), into: &out); out += u
        case .array(let a): head(4, UInt64(a.count), into: &out); for e in a { write(e, into: &out) }
        case .map(let m):
            head(5, UInt64(m.count), into: &out)
            for e in m.entries { write(e.key, into: &out); write(e.value, into: &out) }
        case .tagged(let tag, let v): head(6, tag, into: &out); write(v, into: &out)
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let d):
            out.append(0xFB)
            let bits = d.bitPattern
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }
}

import Platform

/// A JSON value (RFC 8259) read from untrusted text: a JWT's header and claims, a JWKS file, an MQTT
/// command. The parser is strict: one value and nothing after it but white space, UTF-8 only, no
/// duplicate keys in an object (a second `"alg"` must not be able to hide the first), no lone
/// surrogates, and limits on nesting and size, so hostile input fails with a reason instead of growing.
///
/// Strings and member names are equal when their UTF-8 bytes are (RFC 7519 §4.1, RFC 8259 §8.3), not by
/// Unicode canonical equivalence as Swift's `String ==` has it: a member "\u212Aid" (KELVIN SIGN) is
/// not "Kid", and "cafe\u0301" and "caf\u00e9" are two names, both allowed in one object.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number as written (`-12`, `1.5e3`): exact integers stay exact (`int64`), others read as `double`.
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    /// Members in the order written; keys are unique.
    case object(JSONObject)

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var numberValue: JSONNumber? { if case .number(let n) = self { return n } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }

    /// The member `key` of an object (nil for other values or a missing key); the name's bytes must match.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// Strings compared byte for byte (see the type).
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.bytesEqual(y)
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)): return x == y
        default: return false
        }
    }

    /// Compact JSON text for this value; parses back to an equal value.
    public var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return n.text
        case .string(let s): return JSONText.string(s)
        case .array(let items): return "[" + items.map(\.text).joined(separator: ",") + "]"
        case .object(let o): return JSONText.object(o.members.map { ($0.key, $0.value.text) })
        }
    }
}

/// A JSON number, kept as its text so that integers beyond 2^53 are not rounded.
public struct JSONNumber: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let text: String

    /// Checked against the JSON number grammar by the parser; `init(_:)` below writes valid text.
    init(validatedText: String) { self.text = validatedText }
    public init(_ value: Int64) { self.text = String(value) }

    /// The value when the text is an integer (no fraction, no exponent) that fits in Int64.
    public var int64: Int64? {
        guard !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else { return nil }
        return Int64(text)
    }

    /// The value as a Double (finite for any text the parser accepted, except overflow to infinity).
    public var double: Double? {
        guard let d = Double(text), d.isFinite else { return nil }
        return d
    }

    public var description: String { text }
}

/// An object's members in order, with unique keys (unique as UTF-8 bytes; see JSONValue).
public struct JSONObject: Equatable, Sendable {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init() { members = [] }

    /// Builds from pairs; nil when a key repeats.
    public init?(_ pairs: [(String, JSONValue)]) {
        members = []
        for (k, v) in pairs {
            guard self[k] == nil else { return nil }
            members.append((k, v))
        }
    }

    /// The member whose name has exactly the bytes of `key`.
    public subscript(key: String) -> JSONValue? {
        members.first { $0.key.bytesEqual(key) }?.value
    }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count
            && zip(a.members, b.members).allSatisfy { $0.key.bytesEqual($1.key) && $0.value == $1.value }
    }
}

/// Why text is not acceptable JSON: the byte offset and what was wrong there.
public struct JSONParseError: Error, Equatable, CustomStringConvertible, Sendable {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Parses exactly one JSON value from UTF-8 bytes.
    /// - Parameters:
    ///   - maxBytes: longer input is refused before parsing.
    ///   - maxDepth: arrays and objects nested deeper are refused (the parser recurses once per level).
    public static func parse(_ bytes: some Collection<UInt8>, maxBytes: Int = 1 << 20,
                             maxDepth: Int = 32) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= maxBytes else {
            throw JSONParseError(offset: 0, reason: "\(bytes.count) bytes is more than the limit of \(maxBytes)")
        }
        var parser = JSONParser(bytes: Array(bytes), maxDepth: maxDepth)
        return try parser.document()
    }

    public static func parse(_ text: String, maxBytes: Int = 1 << 20, maxDepth: Int = 32) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxBytes: maxBytes, maxDepth: maxDepth)
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var i = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func fail(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? i, reason: reason)
    }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipSpace()
        let value = try value(depth: 0)
        skipSpace()
        guard i == bytes.count else { throw fail("unexpected text after the value") }
        return value
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - i >= w.count, bytes[i..<(i + w.count)].elementsEqual(w) else {
            throw fail("unexpected character")
        }
        i += w.count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth) levels") }
        i += 1
        var object = JSONObject()
        var pairs: [(String, JSONValue)] = []
        var seen = Set<UTF8Key>()
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return .object(object)
        }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name in quotes") }
            let keyOffset = i
            let key = try string()
            guard seen.insert(UTF8Key(key)).inserted else { throw fail("the member name \(JSONText.string(key)) appears twice", at: keyOffset) }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a member name") }
            i += 1
            skipSpace()
            pairs.append((key, try value(depth: depth)))
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input in an object") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw fail("expected ',' or '}' in an object")
        }
        // Keys were checked for uniqueness above.
        object = JSONObject(pairs) ?? object
        return .object(object)
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth) levels") }
        i += 1
        var items: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try value(depth: depth))
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input in an array") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw fail("expected ',' or ']' in an array")
        }
        return .array(items)
    }

    mutating func number() throws(JSONParseError) -> JSONNumber {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, isDigit(bytes[i]) else { throw fail("a number needs a digit") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, isDigit(bytes[i]) { throw fail("a number may not have a leading zero") }
        } else {
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("a fraction needs a digit") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("an exponent needs a digit") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        guard i - start <= 64 else { throw fail("a number longer than 64 characters", at: start) }
        return JSONNumber(validatedText: String(decoding: bytes[start..<i], as: UTF8.self))
    }

    func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    mutating func string() throws(JSONParseError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                break
            }
            if b < 0x20 { throw fail("a control character must be escaped in a string") }
            if b == UInt8(ascii: "\\") {
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw fail("a high surrogate must be followed by a low surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a high surrogate must be followed by a low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("a low surrogate without a high one")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("not a Unicode scalar") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw fail("unknown escape")
                }
                continue
            }
            out.append(b)
            i += 1
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("a string is not valid UTF-8") }
        return s
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - i >= 4 else { throw fail("\\u needs four hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Hex.value(bytes[i]) else { throw fail("\\u needs four hex digits") }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}

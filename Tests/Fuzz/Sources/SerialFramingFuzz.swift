import Core
import Serial
import Settings

/// The door-controller frame: for any payload and any valid framing/policy, the payload cannot forge or
/// break a frame. Checked on the frame's bytes, the way a receiver parses them.
enum SerialFramingFuzz {
    static let formats = ["8N1", "7E1", "7O1", "8E1", "7N2"].compactMap { SerialLineFormat($0) }

    @Sendable static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var settings = SerialSettings()
        settings.path = "/dev/null"
        settings.framing = input.pick(SerialFraming.allCases)
        settings.checksum = settings.framing == .stxEtx ? input.pick(SerialChecksum.allCases) : .none
        settings.payloadEncoding = input.pick(SerialPayloadEncoding.allCases)
        settings.symbologyPrefix = input.flag()
        settings.unsafeBytes = input.pick(UnsafeBytePolicy.allCases)
        settings.format = input.pick(formats)
        settings.prefix = input.field(maxLength: 3)
        settings.suffix = input.flag() ? nil : input.field(maxLength: 3)
        let symbology = input.pick(Symbology.allCases)
        let payload = input.rest()
        // Settings the daemon refuses at start-up are not fuzzed further.
        guard (try? SerialOutput.validate(settings)) != nil else { return }
        check(settings: settings, symbol: DecodedSymbol(symbology: symbology, data: payload,
                                                        bounds: Rect(x: 0, y: 0, w: 1, h: 1)))
    }

    static func check(settings: SerialSettings, symbol: DecodedSymbol) {
        let encoder = SerialFrameEncoder(settings: settings)
        let prefix = settings.prefix, suffix = settings.effectiveSuffix
        let delimiters = Set(prefix + suffix)
        let limit = settings.format.byteLimit
        func unsafe(_ b: UInt8) -> Bool { b < 0x20 || b == 0x7F || delimiters.contains(b) || Int(b) >= limit }
        let payload = symbol.data
        var describe: String {
            "settings \(settings.summary) prefix \(prefix) suffix \(suffix) \(settings.payloadEncoding) "
                + "\(settings.unsafeBytes) tag \(settings.symbologyPrefix), payload \(payload)"
        }

        let frame: [UInt8]
        do {
            frame = try encoder.frame(for: symbol)
        } catch {
            if payload.isEmpty { return }
            require(settings.payloadEncoding == .text && settings.unsafeBytes != .escape,
                    "frame refused (\(error)) under a policy that never refuses: \(describe)")
            if settings.unsafeBytes == .reject {
                let bad = payload.contains(where: unsafe) || String(validating: payload, as: UTF8.self) == nil
                require(bad, "a safe payload was rejected (\(error)): \(describe)")
            }
            return
        }
        require(frame.allSatisfy { Int($0) < limit }, "frame has a byte the line cannot carry: \(frame) \(describe)")
        require(frame.starts(with: prefix) && frame.reversed().starts(with: suffix.reversed()),
                "frame does not start with the prefix and end with the suffix: \(frame) \(describe)")

        // The body: between prefix (and STX) and suffix (and ETX + check field).
        var bodyStart = prefix.count, bodyEnd = frame.count - suffix.count
        if settings.framing == .stxEtx {
            let checkLength = settings.checksum.field(for: []).count
            require(frame.count >= prefix.count + 2 + checkLength + suffix.count, "stx-etx frame too short: \(describe)")
            let etx = bodyEnd - checkLength - 1
            require(frame[bodyStart] == 0x02 && frame[etx] == 0x03, "no STX/ETX where expected: \(frame) \(describe)")
            let covered = Array(frame[(bodyStart + 1)...etx])
            require(Array(frame[(etx + 1)..<bodyEnd]) == settings.checksum.field(for: covered),
                    "check field does not match the covered bytes: \(frame) \(describe)")
            bodyStart += 1
            bodyEnd = etx
        }
        let body = Array(frame[bodyStart..<bodyEnd])
        require(!body.isEmpty, "empty frame body: \(describe)")
        if let bad = body.first(where: { $0 < 0x20 || $0 == 0x7F || delimiters.contains($0) }) {
            require(false, "frame body carries control/delimiter byte \(bad): \(frame) \(describe)")
        }

        // A receiver finds exactly one frame: the payload adds no boundary.
        switch settings.framing {
        case .plain:
            require(occurrences(of: suffix, in: frame) == occurrences(of: suffix, in: prefix) + 1,
                    "payload adds a suffix boundary: \(frame) \(describe)")
        case .stxEtx:
            for marker: UInt8 in [0x02, 0x03] {
                let expected = (prefix + suffix).filter { $0 == marker }.count + 1
                require(frame.filter { $0 == marker }.count == expected, "payload adds STX/ETX: \(frame) \(describe)")
            }
        }

        // The payload comes back from the body as the policy says.
        var rest = body[...]
        if settings.symbologyPrefix {
            let tag = SerialFrameEncoder.tag(for: symbol.symbology)
            require(rest.starts(with: tag), "missing symbology tag: \(describe)")
            rest = rest.dropFirst(tag.count)
        }
        let sent = Array(rest)
        switch (settings.payloadEncoding, settings.unsafeBytes) {
        case (.hex, _):
            require(hexDecode(sent) == payload, "hex body does not decode to the payload: \(sent) \(describe)")
        case (.text, .reject):
            require(sent == payload, "payload was altered under reject: \(sent) \(describe)")
        case (.text, .escape):
            require(unescape(sent) == payload, "escaped body does not unescape to the payload: \(sent) \(describe)")
        case (.text, .strip):
            require(isSubsequence(sent, of: payload), "stripped body is not a subsequence of the payload: \(describe)")
        }
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
        return (0...(haystack.count - needle.count)).filter { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }.count
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }

    static func hexDecode(_ digits: [UInt8]) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let hi = hexValue(digits[i]), let lo = hexValue(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    /// `\xNN` → byte, `\\` → `\`; nil for a malformed escape.
    static func unescape(_ text: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while i < text.count {
            guard text[i] == 0x5C else { out.append(text[i]); i += 1; continue }
            guard i + 1 < text.count else { return nil }
            if text[i + 1] == 0x5C { out.append(0x5C); i += 2; continue }
            guard text[i + 1] == UInt8(ascii: "x"), i + 3 < text.count,
                  let hi = hexValue(text[i + 2]), let lo = hexValue(text[i + 3]) else { return nil }
            out.append(hi << 4 | lo)
            i += 4
        }
        return out
    }

    static func isSubsequence(_ small: [UInt8], of big: [UInt8]) -> Bool {
        var it = big.makeIterator()
        return small.allSatisfy { b in
            while let next = it.next() { if next == b { return true } }
            return false
        }
    }
}

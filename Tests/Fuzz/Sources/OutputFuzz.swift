import Core
import FoundationEssentials
import Stdout
import Platform

/// The stdout event line and the log escaping: a hostile payload must not break a line, the JSON, or a terminal.
enum OutputFuzz {
    /// The fields a consumer reads back from one JSON line.
    struct Line: Decodable {
        let seq: UInt64
        let time: String
        let symbology: String
        let data: String?
        let data_base64: String?
        let frame: UInt64
        let rejected: String?
        let bounds: [String: Int]
    }

    /// EventLine.json: exactly one line, accepted by a JSON parser, and the payload (as text or base64)
    /// and rejection reason come back exactly. EventLine.text: one line without control bytes.
    @Sendable static func eventLine(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let symbology = input.pick(Symbology.allCases)
        let rejected = input.flag()
        let reason = String(decoding: input.field(maxLength: 40), as: UTF8.self)
        let x = Int(Int8(bitPattern: input.byte()))
        let payload = input.rest()
        let symbol = DecodedSymbol(symbology: symbology, data: payload, bounds: Rect(x: x, y: 2, w: 30, h: 40))
        let event = ReadEvent(seq: 7, wallTimeNanoseconds: 1_790_000_000_123_000_000, symbol: symbol, frame: 12,
                              dequeuedAt: MonotonicInstant(nanoseconds: 1_000_000),
                              emittedAt: MonotonicInstant(nanoseconds: 4_500_000),
                              verdict: rejected ? .rejected(reason: reason) : .accepted)

        let json = EventLine.json(event)
        let jsonBytes = Array(json.utf8)
        require(!jsonBytes.contains(0x0A) && !jsonBytes.contains(0x0D), "JSON line contains CR or LF: \(json)")
        require(!jsonBytes.contains { $0 < 0x20 || $0 == 0x7F }, "JSON line contains a raw control byte: \(json)")
        let line: Line
        do {
            line = try JSONDecoder().decode(Line.self, from: Data(jsonBytes))
        } catch {
            require(false, "JSON line does not parse (\(error)): \(json)")
            return
        }
        require(line.seq == 7 && line.frame == 12 && line.symbology == symbology.zbarName, "fields changed: \(json)")
        require(line.bounds["x"] == x, "bounds changed: \(json)")
        if let text = String(validating: payload, as: UTF8.self) {
            require(line.data == text && line.data_base64 == nil, "UTF-8 payload does not round-trip: \(json)")
        } else {
            require(line.data == nil, "invalid UTF-8 payload given as data: \(json)")
            let decoded = line.data_base64.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
            require(decoded == payload, "data_base64 does not round-trip: \(json)")
        }
        require(line.rejected == (rejected ? reason : nil), "rejected reason does not round-trip: \(json)")

        if let text = EventLine.text(event) {
            require(!rejected, "a rejected code was printed as text")
            let textBytes = Array(text.utf8)
            require(!textBytes.contains { $0 < 0x20 || $0 == 0x7F }, "text line contains a control byte: \(text)")
        } else {
            require(rejected, "an accepted code was not printed as text")
        }
    }

    /// Logger.escape: no C0 control byte or DEL, and no C1 control character, reaches a log line.
    @Sendable static func logEscape(_ bytes: [UInt8]) {
        for escaped in [Logger.escape(bytes: bytes), Logger.escape(String(decoding: bytes, as: UTF8.self))] {
            let out = Array(escaped.utf8)
            require(!out.contains { $0 < 0x20 || $0 == 0x7F }, "escaped text contains a control byte: \(out)")
            require(!escaped.unicodeScalars.contains { (0x80...0x9F).contains($0.value) },
                    "escaped text contains a C1 control character: \(out)")
        }
        // Printable ASCII without backslash passes through unchanged.
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C }) {
            require(Logger.escape(bytes: bytes) == String(decoding: bytes, as: UTF8.self), "printable text was altered")
        }
    }
}

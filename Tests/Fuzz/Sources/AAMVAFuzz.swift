import Core
import FoundationEssentials
import Platform

/// The AAMVA driver-licence parser (PDF417 payloads) and its JSON object.
enum AAMVAFuzz {
    struct Line: Decodable {
        let data: String?
        let data_base64: String?
        let aamva: Fields?
    }

    struct Fields: Decodable, Equatable {
        let issuer: String
        let version: Int
        let type: String
        let number: String?
        let expiry: String?
        let jurisdiction: String?
        let country: String?
    }

    static let printable: @Sendable (UInt8) -> Bool = { $0 >= 0x20 && $0 < 0x7F }

    /// AAMVALicence.parse never crashes; what it returns has a 6-digit issuer, a DL or ID type, printable
    /// values of at most 40 bytes, and an expiry that is a real YYYY-MM-DD date; the JSON line of a PDF417
    /// with the payload parses and carries exactly those fields (and none for other symbologies).
    @Sendable static func run(_ bytes: [UInt8]) {
        let licence = AAMVALicence.parse(bytes)
        if let l = licence {
            require(l.issuer.utf8.count == 6 && l.issuer.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }, "issuer \(l.issuer)")
            require((0...99).contains(l.version), "version \(l.version)")
            require(l.documentType == "DL" || l.documentType == "ID", "type \(l.documentType)")
            for value in [l.documentNumber, l.jurisdiction, l.country].compactMap({ $0 }) {
                require(!value.isEmpty && value.utf8.count <= 40 && value.utf8.allSatisfy(printable), "value \(Array(value.utf8))")
            }
            if let e = l.expiry { require(validDate(e), "expiry \(e)") }
        }
        for symbology in [Symbology.pdf417, .qr] {
            let symbol = DecodedSymbol(symbology: symbology, data: bytes, bounds: Rect(x: 0, y: 0, w: 10, h: 10))
            let event = ReadEvent(seq: 1, wallTimeNanoseconds: 1_790_000_000_000_000_000, symbol: symbol, frame: 1,
                                  dequeuedAt: MonotonicInstant(nanoseconds: 0), emittedAt: MonotonicInstant(nanoseconds: 1),
                                  verdict: .accepted)
            let json = EventLine.json(event)
            require(!json.utf8.contains(0x0A) && !json.utf8.contains(0x0D), "JSON line contains CR or LF: \(json)")
            let line: Line
            do {
                line = try JSONDecoder().decode(Line.self, from: Data(json.utf8))
            } catch {
                return require(false, "JSON line does not parse (\(error)): \(json)")
            }
            let want = symbology == .pdf417 ? licence.map {
                Fields(issuer: $0.issuer, version: $0.version, type: $0.documentType, number: $0.documentNumber,
                       expiry: $0.expiry, jurisdiction: $0.jurisdiction, country: $0.country)
            } : nil
            require(line.aamva == want, "aamva in the JSON line is \(String(describing: line.aamva)), parsed \(String(describing: want))")
        }
    }

    static func validDate(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count == 10, b[4] == 45, b[7] == 45 else { return false }
        let parts = s.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, (1900...2199).contains(parts[0]), (1...12).contains(parts[1]) else { return false }
        let leap = parts[0] % 4 == 0 && (parts[0] % 100 != 0 || parts[0] % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][parts[1] - 1]
        return (1...days).contains(parts[2])
    }
}

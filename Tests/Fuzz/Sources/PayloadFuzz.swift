import Core
import Decoding
import Pipeline
import Policies
import Settings

/// The payload normaliser and the payload filters.
enum PayloadFuzz {
    static func isDigits(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 >= 48 && $0 <= 57 } }

    /// SymbolNormaliser.normalise: never crashes; what it lets through has the length and check digit
    /// of its symbology; other symbologies pass unchanged.
    @Sendable static func normaliser(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let symbology = input.pick(Symbology.allCases)
        var settings = DecoderSettings()
        let mask = UInt16(input.byte()) << 8 | UInt16(input.byte())
        settings.symbologies = Set(Symbology.allCases.enumerated().filter { mask & (1 << UInt16($0.offset)) != 0 }.map(\.element))
        let flags = input.byte()
        settings.upcaAsEAN13 = flags & 1 != 0
        settings.upceAsGTIN13 = flags & 2 != 0
        let symbol = DecodedSymbol(symbology: symbology, data: input.rest(), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        guard let out = SymbolNormaliser.normalise(symbol, settings: settings) else { return }
        require(out.bounds == symbol.bounds, "bounds changed")
        switch out.symbology {
        case .ean13, .isbn13:
            require(out.data.count == 13 && isDigits(out.data), "EAN-13 out is not 13 digits: \(out.data)")
            require(SymbolNormaliser.gtinCheckDigitValid(out.data), "EAN-13 out has a bad check digit: \(out.data)")
        case .upca:
            require(out.data.count == 12 && isDigits(out.data), "UPC-A out is not 12 digits: \(out.data)")
            require(SymbolNormaliser.gtinCheckDigitValid(out.data), "UPC-A out has a bad check digit: \(out.data)")
        case .ean8:
            require(out.data.count == 8 && SymbolNormaliser.gtinCheckDigitValid(out.data), "bad EAN-8 out: \(out.data)")
        case .upce:
            // The check digit is worked out here from the UPC-A the UPC-E stands for, not by the code under test.
            let eight = settings.upceAsGTIN13 ? nil : out.data
            require(isDigits(symbol.data) && symbol.data.count == 8, "a UPC-E of \(symbol.data.count) bytes passed: \(symbol.data)")
            require(eight == nil || eight == symbol.data, "a UPC-E was changed: \(symbol.data) -> \(out.data)")
            guard let upcA = upceToUPCA(symbol.data) else { return require(false, "a UPC-E that does not expand passed: \(symbol.data)") }
            require(gs1CheckDigit(upcA.dropLast()) == upcA.last, "UPC-E out has a bad check digit: \(symbol.data) (UPC-A \(upcA))")
            if settings.upceAsGTIN13 {
                require(out.data == [48] + upcA, "upce-as-gtin13: \(symbol.data) became \(out.data), not 0 + UPC-A \(upcA)")
            }
        default:
            require(out == symbol, "a \(symbology) symbol was changed")
        }
    }

    /// The GS1 mod-10 check digit (ASCII) of the digits before it: from the right, weights 3, 1, 3, ...
    static func gs1CheckDigit(_ body: ArraySlice<UInt8>) -> UInt8 {
        var sum = 0
        var weight = 3
        for digit in body.reversed() {
            sum += (Int(digit) - 48) * weight
            weight = 4 - weight
        }
        return UInt8(48 + (10 - sum % 10) % 10)
    }

    /// UPC-E (number system, six digits, check) to its 12-digit UPC-A, by the last of the six digits:
    /// 0-2: manufacturer d1 d2 d6 00, item 00 d3 d4 d5; 3: d1 d2 d3 00 000 d4 d5; 4: d1 d2 d3 d4 0 0000 d5;
    /// 5-9: d1 d2 d3 d4 d5 0000 d6. nil unless 8 ASCII digits.
    static func upceToUPCA(_ e: [UInt8]) -> [UInt8]? {
        guard e.count == 8, isDigits(e) else { return nil }
        let d = Array(e[1...6])
        let zero = UInt8(ascii: "0")
        let middle: [UInt8]
        switch d[5] {
        case UInt8(ascii: "0")...UInt8(ascii: "2"): middle = [d[0], d[1], d[5], zero, zero, zero, zero, d[2], d[3], d[4]]
        case UInt8(ascii: "3"): middle = [d[0], d[1], d[2], zero, zero, zero, zero, zero, d[3], d[4]]
        case UInt8(ascii: "4"): middle = [d[0], d[1], d[2], d[3], zero, zero, zero, zero, zero, d[4]]
        default: middle = [d[0], d[1], d[2], d[3], d[4], zero, zero, zero, zero, d[5]]
        }
        return [e[0]] + middle + [e[7]]
    }

    /// Regular expressions a user might configure (the filter's regex comes from the config, not the code),
    /// each with a test written here without a regex engine: a payload that is accepted matches it
    /// (whole-match, as allow-regex works; `.` matches no line feed).
    static let regexes: [(pattern: String, matches: @Sendable ([UInt8]) -> Bool)?] = [
        nil,
        ("[0-9]{4,12}", { (4...12).contains($0.count) && isDigits($0) }),
        ("ID-[A-Z0-9]+", { p in p.count > 3 && p.starts(with: Array("ID-".utf8)) && p.dropFirst(3).allSatisfy { ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) } }),
        ("(?i)ticket:[a-f0-9]{8}", { p in
            p.count == 15 && p.prefix(7).map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 } == Array("ticket:".utf8)
                && p.dropFirst(7).allSatisfy { ($0 | 0x20 >= 97 && $0 | 0x20 <= 102) || ($0 >= 48 && $0 <= 57) } }),
        (".*", { !$0.contains(0x0A) }),
        ("[^\\x00-\\x1f]*", { !$0.contains { $0 < 0x20 } }),
    ]

    /// PayloadFilter.verdict: never crashes, and an accepted code really meets every configured rule,
    /// allow-regex included (checked by the test beside each pattern, not by a regex).
    @Sendable static func filter(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var settings = FilterSettings()
        settings.minLength = Int(input.byte()) % 16
        settings.maxLength = Int(input.byte()) % 64
        settings.characters = input.pick(FilterSettings.Characters.allCases)
        let prefixCount = Int(input.byte()) % 3
        settings.allowPrefixes = (0..<prefixCount).map { _ in String(decoding: input.field(maxLength: 4), as: UTF8.self) }
        let regex = input.pick(regexes)
        settings.allowRegex = regex?.pattern
        let payload = input.rest()
        let filter: PayloadFilter
        do {
            filter = try PayloadFilter(settings: settings)
        } catch {
            require(false, "a valid regex was refused: \(error)")
            return
        }
        let verdict = filter.verdict(for: DecodedSymbol(symbology: .qr, data: payload, bounds: Rect(x: 0, y: 0, w: 1, h: 1)))
        guard verdict == .accepted else { return }
        require(payload.count >= settings.minLength, "accepted a payload shorter than min-length")
        require(settings.maxLength == 0 || payload.count <= settings.maxLength, "accepted a payload longer than max-length")
        switch settings.characters {
        case .any: break
        case .text:
            let text = String(validating: payload, as: UTF8.self)
            require(text != nil, "accepted invalid UTF-8 as text")
            require(!payload.contains { $0 < 0x20 || $0 == 0x7F }, "accepted control bytes as text")
        case .printable:
            require(payload.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "accepted non-printable bytes")
        case .alnum:
            require(payload.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) },
                    "accepted non-alphanumeric bytes")
        case .digits:
            require(isDigits(payload), "accepted non-digits")
        }
        if !settings.allowPrefixes.isEmpty {
            require(settings.allowPrefixes.contains { payload.starts(with: Array($0.utf8)) }, "accepted a payload without an allowed prefix")
        }
        if let regex {
            require(String(validating: payload, as: UTF8.self) != nil, "accepted invalid UTF-8 under allow-regex")
            require(regex.matches(payload), "accepted a payload that does not match allow-regex \(regex.pattern): \(payload)")
        }
    }
}

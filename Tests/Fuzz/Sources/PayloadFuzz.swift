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
        settings.upcaAsEAN13 = input.flag()
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
            require(out.data.count == 8 && isDigits(out.data), "bad UPC-E out: \(out.data)")
        default:
            require(out == symbol, "a \(symbology) symbol was changed")
        }
    }

    /// Regular expressions a user might configure (the filter's regex comes from the config, not the code).
    static let regexes: [String?] = [nil, "[0-9]{4,12}", "ID-[A-Z0-9]+", "(?i)ticket:[a-f0-9]{8}", ".*", "[^\\x00-\\x1f]*"]

    /// PayloadFilter.verdict: never crashes, and an accepted code really meets every configured rule.
    @Sendable static func filter(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var settings = FilterSettings()
        settings.minLength = Int(input.byte()) % 16
        settings.maxLength = Int(input.byte()) % 64
        settings.characters = input.pick(FilterSettings.Characters.allCases)
        let prefixCount = Int(input.byte()) % 3
        settings.allowPrefixes = (0..<prefixCount).map { _ in String(decoding: input.field(maxLength: 4), as: UTF8.self) }
        settings.allowRegex = input.pick(regexes)
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
        if settings.allowRegex != nil {
            require(String(validating: payload, as: UTF8.self) != nil, "accepted invalid UTF-8 under allow-regex")
        }
    }
}

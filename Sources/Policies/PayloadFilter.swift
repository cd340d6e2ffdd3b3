import Core
import Settings

/// Applies `FilterSettings` to each code before any output sees it. A rejected code gets error feedback
/// and a log line, and goes to no door output.
public struct PayloadFilter: ReadPolicy, @unchecked Sendable {
    public let settings: FilterSettings
    // Regex is immutable once built; it is only read.
    private let regex: Regex<AnyRegexOutput>?
    /// The same regex matching Unicode scalars, not characters: see `matchesRegex`.
    private let scalarRegex: Regex<AnyRegexOutput>?

    public init(settings: FilterSettings) throws(UsageError) {
        self.settings = settings
        if let pattern = settings.allowRegex {
            do {
                let built = try Regex(pattern)
                regex = built
                scalarRegex = built.matchingSemantics(.unicodeScalar)
            } catch {
                throw UsageError("--allow-regex: '\(pattern)' is not a valid regular expression: \(error)")
            }
        } else {
            regex = nil
            scalarRegex = nil
        }
    }

    public func judge(_ event: inout ReadEvent) {
        let verdict = verdict(for: event.symbol)
        if !verdict.isAccepted { event.verdict = verdict }
    }

    public func verdict(for symbol: DecodedSymbol) -> Verdict {
        let bytes = symbol.data
        if bytes.count < settings.minLength {
            return .rejected(reason: "payload shorter than min-length \(settings.minLength) (\(bytes.count) bytes)")
        }
        if settings.maxLength > 0 && bytes.count > settings.maxLength {
            return .rejected(reason: "payload longer than max-length \(settings.maxLength) (\(bytes.count) bytes)")
        }
        switch settings.characters {
        case .any: break
        case .text:
            guard let text = String(validating: bytes, as: UTF8.self),
                  !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) })
            else { return .rejected(reason: "payload has control characters or is not UTF-8 (allowed-chars text)") }
        case .printable:
            guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                return .rejected(reason: "payload has characters outside printable ASCII (allowed-chars printable)")
            }
        case .alnum:
            guard bytes.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }) else {
                return .rejected(reason: "payload has characters other than letters and digits (allowed-chars alnum)")
            }
        case .digits:
            guard bytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                return .rejected(reason: "payload has characters other than digits (allowed-chars digits)")
            }
        }
        if !settings.allowPrefixes.isEmpty,
           !settings.allowPrefixes.contains(where: { bytes.starts(with: Array($0.utf8)) }) {
            return .rejected(reason: "payload does not start with an allowed prefix")
        }
        if regex != nil {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .rejected(reason: "payload does not match allow-regex")
            }
            let ascii = bytes.allSatisfy { $0 < 0x80 }
            if !ascii, let lookalike = text.unicodeScalars.first(where: Self.foldsToASCII) {
                let code = String(lookalike.value, radix: 16, uppercase: true)
                return .rejected(reason: "payload does not match allow-regex: it has U+\(code), which case-insensitive matching would take for an ASCII letter")
            }
            guard matchesRegex(text, ascii: ascii) else {
                return .rejected(reason: "payload does not match allow-regex")
            }
        }
        return .accepted
    }

    /// A scalar outside ASCII whose upper or lower case has an ASCII letter (U+212A KELVIN SIGN is `k`,
    /// U+017F LONG S is `S`, U+0130 is `i` and a dot, U+FB00 is `FF`): under `(?i)` Swift's Regex folds it
    /// to that letter, so `(?i)ticket:` would pass bytes the operator never wrote. Refused whatever the
    /// pattern: no code a kiosk is shown needs one.
    static func foldsToASCII(_ scalar: Unicode.Scalar) -> Bool {
        guard !scalar.isASCII else { return false }
        let cased = scalar.properties.lowercaseMapping + scalar.properties.uppercaseMapping
        return cased.unicodeScalars.contains { $0.isASCII && $0.properties.isAlphabetic }
    }

    /// Swift's Regex compares characters by Unicode canonical equivalence: `caf\u{e9}` in allow-regex
    /// matches the decomposed "cafe\u{301}", whose bytes the operator never wrote (allow-prefix compares
    /// bytes). A payload that is not ASCII must therefore also match scalar by scalar (the same scalars,
    /// so the same bytes, for every literal). ASCII payloads match as they always have (for them the two
    /// differ only in counting "\r\n" as one character).
    private func matchesRegex(_ text: String, ascii: Bool) -> Bool {
        guard let regex, (try? regex.wholeMatch(in: text)) != nil else { return false }
        if ascii { return true }
        guard let scalarRegex else { return false }
        return (try? scalarRegex.wholeMatch(in: text)) != nil
    }
}

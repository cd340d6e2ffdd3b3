import Core

/// What the user chose to accept (the `[filter]` section), like commercial readers' payload masks.
public struct FilterSettings: Equatable, Sendable {
    public enum Characters: String, CaseIterable, Sendable {
        /// Any bytes.
        case any
        /// Valid UTF-8 without control characters.
        case text
        /// Printable ASCII (0x20–0x7E) only.
        case printable
        /// Letters and digits only.
        case alnum
        /// Digits only.
        case digits
    }

    public var minLength = 0
    /// 0: no limit.
    public var maxLength = 0
    public var characters: Characters = .any
    /// A code must start with one of these (empty: any).
    public var allowPrefixes: [String] = []
    /// A code must match this regular expression as a whole (nil: any).
    public var allowRegex: String? = nil

    public init() {}

    public var isActive: Bool {
        minLength > 0 || maxLength > 0 || characters != .any || !allowPrefixes.isEmpty || allowRegex != nil
    }
}

/// Applies `FilterSettings` to each code before it is sent on. A rejected code gets error feedback and
/// a log line, and is not sent to the door controller.
public struct PayloadFilter: PayloadPolicy, @unchecked Sendable {
    public let settings: FilterSettings
    // Regex is immutable once built; it is only read.
    private let regex: Regex<AnyRegexOutput>?

    public init(settings: FilterSettings) throws(UsageError) {
        self.settings = settings
        if let pattern = settings.allowRegex {
            do {
                regex = try Regex(pattern)
            } catch {
                throw UsageError("--allow-regex: '\(pattern)' is not a valid regular expression: \(error)")
            }
        } else {
            regex = nil
        }
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
        if let regex {
            guard let text = String(validating: bytes, as: UTF8.self), (try? regex.wholeMatch(in: text)) != nil else {
                return .rejected(reason: "payload does not match allow-regex")
            }
        }
        return .accepted
    }
}

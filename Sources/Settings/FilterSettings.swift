import Core

/// What the user chose to accept (the `[filter]` section), like commercial readers' payload masks.
public struct FilterSettings: SettingsSection {
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

extension RunSettings {
    public var filter: FilterSettings {
        get { self[FilterSettings.self] }
        set { self[FilterSettings.self] = newValue }
    }
}

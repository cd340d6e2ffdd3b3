import Core

/// One section's settings: a plain value whose defaults are written once, in its `init()`, and whose
/// runtime state lives in the stage that uses it, never here.
public protocol SettingsSection: Equatable, Sendable {
    init()
}

/// Everything `scangate run` can be told, from flags and the config file: one value per section. Each
/// section's file (CaptureSettings.swift, SerialSettings.swift, ...) declares its type and the accessor
/// (`settings.serial`), and its options file the keys that set it; a section that was never set reads
/// as its defaults. Settings only: this target imports no device code.
public struct RunSettings: Equatable, Sendable {
    private var sections: [ObjectIdentifier: any SettingsSection] = [:]
    /// Exit 0 after the first reported code.
    public var oneshot = false
    public var logLevel: LogLevel = .info

    public init() {}

    /// A section's settings (its defaults when never set).
    public subscript<S: SettingsSection>(_ section: S.Type) -> S {
        get { (sections[ObjectIdentifier(S.self)] as? S) ?? S() }
        set { sections[ObjectIdentifier(S.self)] = newValue }
    }

    public static func == (a: RunSettings, b: RunSettings) -> Bool {
        guard a.oneshot == b.oneshot, a.logLevel == b.logLevel else { return false }
        for key in Set(a.sections.keys).union(b.sections.keys) {
            if let x = a.sections[key] {
                if !Self.same(x, b.sections[key]) { return false }
            } else if let y = b.sections[key], !Self.same(y, nil) {
                return false
            }
        }
        return true
    }

    /// `a` equals `b`, where a missing `b` stands for the section's defaults.
    private static func same<S: SettingsSection>(_ a: S, _ b: (any SettingsSection)?) -> Bool {
        ((b as? S) ?? S()) == a
    }
}

/// A `[section]` of the INI file. Each section declares its own (`ConfigSection.serial` in
/// SerialOptions.swift); the file knows the sections the option table uses, in table order.
public struct ConfigSection: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ name: String) { rawValue = name }
    public var description: String { rawValue }
}

extension ConfigSection {
    public static let camera = ConfigSection("camera")
    public static let decoder = ConfigSection("decoder")
    public static let debounce = ConfigSection("debounce")
    public static let filter = ConfigSection("filter")
    public static let output = ConfigSection("output")
    public static let serial = ConfigSection("serial")
    public static let gpio = ConfigSection("gpio")
    public static let beep = ConfigSection("beep")
    public static let feedback = ConfigSection("feedback")
    public static let service = ConfigSection("service")
}

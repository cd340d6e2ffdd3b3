import Core

/// All options of `scangate run`, by section. Each section's options live in `Options+Section.swift`.
public enum OptionTable {
    public static var all: [OptionSpec] { camera + decoder + debounce + filter + output + serial + gpio + beep }

    public static func find(_ name: String) -> OptionSpec? { all.first { $0.name == name } }
}

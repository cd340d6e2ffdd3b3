import Core

/// All options of `scangate run`, section by section, in the order `--help`, `check-config` and the
/// example config show them. Each section's options live in its `XOptions.swift`.
public enum OptionTable {
    public static var all: [OptionSpec] {
        camera + decoder + debounce + filter + credential + policy + output + serial + wiegand + osdp + doorRelay + mqtt + feedback + gpio + beep + service
    }

    public static func find(_ name: String) -> OptionSpec? { all.first { $0.name == name } }

    /// The sections `table` uses, in the order they first appear.
    public static func sections(of table: [OptionSpec]) -> [ConfigSection] {
        var seen: [ConfigSection] = []
        for option in table where !seen.contains(option.section) { seen.append(option.section) }
        return seen
    }
}

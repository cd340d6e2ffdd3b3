/// One GPIO line that a configured output or feedback device will request, and who names it: what the
/// catalogue-wide one-owner check compares (`Catalog.check`).
public struct GPIOLineClaim: Equatable, Sendable {
    /// The config file section: "door-relay".
    public var section: String
    /// The option (and config key) that names the line: "wiegand-d0".
    public var option: String
    /// The chip as configured (label, name or path).
    public var chip: String
    public var line: GPIOLineSpec

    public init(section: String, option: String, chip: String, line: GPIOLineSpec) {
        self.section = section
        self.option = option
        self.chip = chip
        self.line = line
    }

    /// "[wiegand] wiegand-d0".
    public var owner: String { "[\(section)] \(option)" }
}

#if canImport(Glibc)
import Glibc
#endif
import Platform
import Settings

/// One chip found on the machine, for error messages, `doctor` and `list` output.
public struct GPIOChipInfo: Equatable, Sendable, CustomStringConvertible {
    public var path: String
    public var name: String
    public var label: String
    public var lineCount: Int
    /// Set when the chip could not be opened to read its label.
    public var error: Errno?

    public init(path: String, name: String, label: String, lineCount: Int, error: Errno? = nil) {
        self.path = path
        self.name = name
        self.label = label
        self.lineCount = lineCount
        self.error = error
    }

    /// "gpiochip0 [pinctrl-rp1] (54 lines)" or "gpiochip2 (cannot open: Permission denied (EACCES))".
    public var description: String {
        if let error { return "\(name) (cannot open: \(error))" }
        return "\(name) [\(label)] (\(lineCount) lines)"
    }
}

/// Finding `--gpio-chip` and each role's line through the gpiod calls seam. Never assumes a chip
/// number: a chip is named by label, by name or by path, and errors list what the machine has.
public enum GPIOLookup {
    /// Every chip under /dev with its label (each is opened and closed again).
    public static func listChips(_ calls: GpiodCalls) -> [GPIOChipInfo] {
        calls.chipPaths().map { path in
            let name = String(path.split(separator: "/").last ?? Substring(path))
            switch calls.openChip(path: path) {
            case .success(let chip):
                defer { calls.closeChip(chip) }
                return GPIOChipInfo(path: path, name: calls.chipName(chip).isEmpty ? name : calls.chipName(chip),
                                    label: calls.chipLabel(chip), lineCount: calls.numLines(chip))
            case .failure(let e):
                return GPIOChipInfo(path: path, name: name, label: "", lineCount: 0, error: e)
            }
        }
    }

    /// "chips here: gpiochip0 [pinctrl-rp1] (54 lines), gpiochip1 [rp1-gpio] (4 lines)".
    public static func availableChipsText(_ calls: GpiodCalls) -> String {
        let chips = listChips(calls)
        if chips.isEmpty { return "this machine has no /dev/gpiochip* (no GPIO driver loaded)" }
        return "chips here: " + chips.map(\.description).joined(separator: ", ")
    }

    /// How `--gpio-chip` is read: a path if it contains "/", a name if it is "gpiochipN", else a label
    /// (and, only if no chip has that label, libgpiod's own lookup, which also takes a number).
    public enum ChipSpec: Equatable, Sendable {
        case path(String), name(String), label(String)

        public init(_ text: String) {
            if text.contains("/") { self = .path(text) }
            else if text.hasPrefix("gpiochip"), !text.dropFirst(8).isEmpty,
                    text.dropFirst(8).allSatisfy({ $0.isASCII && $0.isNumber }) { self = .name(text) }
            else { self = .label(text) }
        }
    }

    /// Opens the chip `--gpio-chip` names.
    public static func openChip(_ text: String, calls: GpiodCalls) -> Result<GpiodChipHandle, GPIOError> {
        let spec = ChipSpec(text)
        var result: Result<GpiodChipHandle, Errno>
        switch spec {
        case .path(let p): result = calls.openChip(path: p)
        case .name(let n): result = calls.openChip(name: n)
        case .label(let l):
            result = calls.openChip(label: l)
            if case .failure(let e) = result, e == .noSuchFile,
               l.allSatisfy({ $0.isASCII && $0.isNumber }) {
                result = calls.openChip(lookup: l)
            }
        }
        switch result {
        case .success(let chip): return .success(chip)
        case .failure(let e) where e == .noSuchFile || e == .noDevice:
            let how: String
            switch spec {
            case .path: how = "path"
            case .name: how = "name"
            case .label: how = "label"
            }
            return .failure(GPIOError(.chipNotFound,
                "no GPIO chip with \(how) '\(text)' (--gpio-chip takes a label like pinctrl-rp1, a name like gpiochip0 or a path); \(availableChipsText(calls))",
                errno: e))
        case .failure(let e) where e == .permissionDenied || e.rawValue == EPERM:
            return .failure(GPIOError(.chipUnavailable,
                "cannot open GPIO chip '\(text)' (--gpio-chip): \(e); add the user to group gpio (see udev/)",
                errno: e))
        case .failure(let e) where e.rawValue == ENOTTY:
            return .failure(GPIOError(.chipUnavailable,
                "cannot open GPIO chip '\(text)' (--gpio-chip): \(e): it is not a GPIO chip; \(availableChipsText(calls))",
                errno: e))
        case .failure(let e):
            return .failure(GPIOError(.chipUnavailable, "cannot open GPIO chip '\(text)' (--gpio-chip): \(e)", errno: e))
        }
    }

    /// "pinctrl-rp1 (gpiochip0)": how errors name an open chip.
    public static func chipTitle(_ chip: GpiodChipHandle, calls: GpiodCalls) -> String {
        let label = calls.chipLabel(chip), name = calls.chipName(chip)
        if label.isEmpty { return name }
        if name.isEmpty || name == label { return label }
        return "\(label) (\(name))"
    }

    /// The names of the chip's lines, in offset order (unnamed lines left out).
    public static func lineNames(_ chip: GpiodChipHandle, calls: GpiodCalls) -> [String] {
        (0..<calls.numLines(chip)).compactMap { offset in
            guard case .success(let line) = calls.line(chip, offset: offset) else { return nil }
            return calls.lineName(line)
        }
    }

    /// Finds a role's line by offset or name. `flag` is the option that named it, for the message.
    public static func findLine(_ spec: GPIOLineSpec, on chip: GpiodChipHandle, flag: String,
                                calls: GpiodCalls) -> Result<GpiodLineHandle, GPIOError> {
        let count = calls.numLines(chip)
        switch spec {
        case .offset(let offset):
            guard offset < count else {
                return .failure(GPIOError(.lineNotFound,
                    "no line \(offset) on \(chipTitle(chip, calls: calls)) (\(flag)): it has \(count) lines, offsets 0-\(max(0, count - 1))"))
            }
            switch calls.line(chip, offset: offset) {
            case .success(let line): return .success(line)
            case .failure(let e):
                return .failure(GPIOError(.lineFailed,
                    "cannot get line \(offset) on \(chipTitle(chip, calls: calls)) (\(flag)): \(e)", errno: e))
            }
        case .name(let name):
            switch calls.findLine(chip, name: name) {
            case .success(let line): return .success(line)
            case .failure(let e) where e == .noSuchFile:
                return .failure(GPIOError(.lineNotFound,
                    "no such line \(name) on \(chipTitle(chip, calls: calls)) (\(flag)): \(linesText(chip, count: count, calls: calls))",
                    errno: e))
            case .failure(let e):
                return .failure(GPIOError(.lineFailed,
                    "cannot look up line \(name) on \(chipTitle(chip, calls: calls)) (\(flag)): \(e)", errno: e))
            }
        }
    }

    /// "lines are GPIO0, GPIO1, …" (at most 64 names), or how to name an unnamed chip's lines.
    static func linesText(_ chip: GpiodChipHandle, count: Int, calls: GpiodCalls) -> String {
        let names = lineNames(chip, calls: calls)
        if names.isEmpty {
            return count == 0 ? "the chip has no lines"
                : "its lines have no names; give an offset 0-\(count - 1)"
        }
        let shown = names.prefix(64).joined(separator: ", ")
        let more = names.count > 64 ? ", ... (\(names.count - 64) more)" : ""
        return "lines are \(shown)\(more) (or give an offset 0-\(count - 1))"
    }

    /// "GPIO17 (offset 17)", "offset 17" or "offset 17 (GPIO17)": how messages name a line.
    public static func lineTitle(_ spec: GPIOLineSpec, line: GpiodLineHandle?, calls: GpiodCalls) -> String {
        switch spec {
        case .name(let n): return n
        case .offset(let o):
            if let line, let n = calls.lineName(line) { return "\(n) (offset \(o))" }
            return "offset \(o)"
        }
    }
}

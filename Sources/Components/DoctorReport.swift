import Core

/// Which part of the kiosk a doctor check is about (a component's name); decides the exit code of a failure.
public struct DoctorPart: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ name: String) { rawValue = name }
    public var description: String { rawValue }

    public static let config = DoctorPart("config")
    public static let camera = DoctorPart("camera")
    public static let gpio = DoctorPart("gpio")
    public static let sound = DoctorPart("sound")
    public static let serial = DoctorPart("serial")
}

/// One line of the doctor table: what was checked, how it went, what was seen, and how to fix a failure.
public struct DoctorRow: Equatable, Sendable {
    public enum Result: String, Sendable {
        case pass = "PASS"
        case fail = "FAIL"
        /// Not checked because an earlier check of the same part failed.
        case skip = "SKIP"
        /// Works, but a setting gives something up (the detail says what); not a failure.
        case warn = "WARN"
    }

    public var part: DoctorPart
    /// "camera open", "gpio line green": the first column.
    public var check: String
    public var result: Result
    public var detail: String
    /// Set for every failure: the concrete thing to do.
    public var fix: String

    public init(_ part: DoctorPart, _ check: String, _ result: Result, _ detail: String, fix: String = "") {
        self.part = part
        self.check = check
        self.result = result
        self.detail = detail
        self.fix = fix
    }

    public static func pass(_ part: DoctorPart, _ check: String, _ detail: String) -> DoctorRow {
        DoctorRow(part, check, .pass, detail)
    }

    public static func fail(_ part: DoctorPart, _ check: String, _ detail: String, fix: String) -> DoctorRow {
        DoctorRow(part, check, .fail, detail, fix: fix)
    }

    public static func skip(_ part: DoctorPart, _ check: String, _ detail: String) -> DoctorRow {
        DoctorRow(part, check, .skip, detail)
    }

    /// A warning: what the setting gives up, and (as the fix line) how to stop giving it up.
    public static func warn(_ part: DoctorPart, _ check: String, _ detail: String, fix: String) -> DoctorRow {
        DoctorRow(part, check, .warn, detail, fix: fix)
    }
}

/// Every row of one doctor run, its exit code and its table.
public struct DoctorReport: Equatable, Sendable {
    /// Exit code when a device other than the camera fails (the camera's own failure gives 1).
    public static let deviceFailureExitCode: Int32 = 4

    public var rows: [DoctorRow]

    public init(rows: [DoctorRow]) { self.rows = rows }

    public var failures: [DoctorRow] { rows.filter { $0.result == .fail } }

    /// The rows about one part.
    public func rows(_ part: DoctorPart) -> [DoctorRow] { rows.filter { $0.part == part } }

    /// 2: the config is invalid (run would refuse it); 1: the camera failed; 4: another device failed; 0: all pass.
    public var exitCode: Int32 {
        let failed = Set(failures.map(\.part))
        if failed.contains(.config) { return ExitCode.usage.rawValue }
        if failed.contains(.camera) { return ExitCode.nothingFound.rawValue }
        if !failed.isEmpty { return Self.deviceFailureExitCode }
        return ExitCode.success.rawValue
    }

    /// The table for stdout: CHECK, RESULT, DETAIL columns; the fix on its own line under a failure's
    /// detail; a closing count. Control characters in details (payloads in view) are escaped.
    public var table: String {
        let checkWidth = max(5, rows.map(\.check.count).max() ?? 0) + 2
        let resultWidth = 8
        let indent = String(repeating: " ", count: checkWidth + resultWidth)
        var lines = ["CHECK".padding(checkWidth) + "RESULT".padding(resultWidth) + "DETAIL"]
        for row in rows {
            // Control characters only: a detail that already shows an escape (a serial prefix \x02) keeps
            // its one backslash. A payload in view is escaped whole where it is described.
            let detail = Logger.escapeControls(row.detail)
            lines.append(row.check.padding(checkWidth) + row.result.rawValue.padding(resultWidth)
                         + (detail.isEmpty ? "-" : detail))
            if !row.fix.isEmpty { lines.append(indent + "fix: " + Logger.escapeControls(row.fix)) }
        }
        let passed = rows.filter { $0.result == .pass }.count
        let skipped = rows.filter { $0.result == .skip }.count
        let warned = rows.filter { $0.result == .warn }.count
        var summary = "\(passed) passed, \(failures.count) failed"
        if skipped > 0 { summary += ", \(skipped) skipped" }
        if warned > 0 { summary += ", \(warned) warning" + (warned == 1 ? "" : "s") }
        lines.append(summary)
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// Left-aligned in a column `width` wide (at least one space after it).
    public func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}

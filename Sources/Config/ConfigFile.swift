import CInih
import Core
import Platform
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// One `key = value` line of the INI file, matched to its option.
public struct ConfigEntry: Sendable {
    public let option: OptionSpec
    public let value: String
    /// 1-based line in the file, for error messages.
    public let line: Int
}

/// The INI configuration file (`/etc/scangate/scangate.conf`), parsed by libinih. Every `[section]`
/// `key = value` is an option of `scangate run` with the same name, in the section the option table gives it.
/// Errors name the file, the line and the key, and say what is allowed.
public enum ConfigFile {
    /// Where the packaged service reads its configuration.
    public static let defaultPath = "/etc/scangate/scangate.conf"

    /// Reads and parses a config file. Unreadable files, syntax errors, unknown sections and keys,
    /// keys in the wrong section and repeated keys are errors; values are checked by `apply`.
    public static func load(path: String, table: [OptionSpec] = OptionTable.all) throws(UsageError) -> [ConfigEntry] {
        let bytes: [UInt8]
        do {
            bytes = try ConfigFileReader.readAll(path: path)
        } catch {
            throw UsageError("cannot read config file \(path): \(error.reasonText)")
        }
        return try parse(bytes, name: path, table: table)
    }

    /// Parses INI text; `name` is used in error messages in place of a path.
    public static func parse(_ text: String, name: String, table: [OptionSpec] = OptionTable.all) throws(UsageError) -> [ConfigEntry] {
        try parse(Array(text.utf8), name: name, table: table)
    }

    static func parse(_ bytes: [UInt8], name: String, table: [OptionSpec]) throws(UsageError) -> [ConfigEntry] {
        let context = INIParseContext(bytes: bytes, name: name, table: table)
        let result = withExtendedLifetime(context) {
            let pointer = Unmanaged.passUnretained(context).toOpaque()
            return ini_parse_stream(INIParseContext.reader, pointer, INIParseContext.handler, pointer)
        }
        // Report whichever problem comes first in the file: inih's syntax error or ours.
        if let error = context.firstError, result <= 0 || Int(result) >= context.firstErrorLine { throw error }
        if result > 0 {
            // inih found a line that is neither a section, a key = value, a comment nor blank.
            throw UsageError("\(name):\(result): syntax error: expected [section], key = value, or a comment (# or ;)")
        }
        if result != 0 {
            throw UsageError("\(name): cannot parse (inih error \(result))")
        }
        return context.entries
    }

    /// Applies parsed entries in file order; a bad value is reported as "FILE:LINE: [section] key: problem".
    public static func apply(_ entries: [ConfigEntry], from name: String, to settings: inout RunSettings) throws(UsageError) {
        for entry in entries {
            do {
                try entry.option.apply(&settings, entry.value)
            } catch {
                throw UsageError("\(name):\(entry.line): [\(entry.option.section.rawValue)] \(entry.option.name): \(error)")
            }
        }
    }
}

/// State of one libinih parse, reached from the C callbacks through their context pointer.
private final class INIParseContext {
    let bytes: [UInt8]
    let name: String
    let table: [OptionSpec]
    var offset = 0
    /// The line most recently handed to inih (1-based) and its text.
    var line = 0
    var lineText: [UInt8] = []
    var entries: [ConfigEntry] = []
    var firstLineOfOption: [String: Int] = [:]
    var lastHandled: (section: String, key: String)?
    var firstError: UsageError?
    var firstErrorLine = 0
    /// The longest `key = value` line a file may hold. inih reads lines of at most its INI_MAX_LINE (200
    /// bytes with CR, LF and NUL); a longer one is split here by inih's own rules (see `longLine`).
    static let maxLineLength = 4096
    var lineLimit = INIParseContext.maxLineLength
    /// Values of lines too long for inih, by line: inih was handed `key = ` and the value is taken here.
    var longValues: [Int: String] = [:]

    init(bytes: [UInt8], name: String, table: [OptionSpec]) {
        self.bytes = bytes
        self.name = name
        self.table = table
    }

    var sections: [ConfigSection] { OptionTable.sections(of: table) }
    var sectionList: String { sections.map { "[\($0.rawValue)]" }.joined(separator: ", ") }

    /// The section named `name`, when the option table has it.
    func section(named name: String) -> ConfigSection? { sections.first { $0.rawValue == name } }

    func fail(_ message: String) {
        if firstError == nil {
            firstError = UsageError("\(name):\(line): \(message)")
            firstErrorLine = line
        }
    }

    /// inih's fgets-style reader: hands out one line per call, so `line` is the line inih is parsing.
    static let reader: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, UnsafeMutableRawPointer?)
        -> UnsafeMutablePointer<CChar>? = { buffer, size, stream in
            guard let buffer, let stream else { return nil }
            let context = Unmanaged<INIParseContext>.fromOpaque(stream).takeUnretainedValue()
            return context.nextLine(into: buffer, size: Int(size))
        }

    /// inih's handler: called for each `key = value`, with the current section.
    static let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                                        UnsafePointer<CChar>?) -> Int32 = { user, section, key, value in
        guard let user, let section, let key else { return 0 }
        let context = Unmanaged<INIParseContext>.fromOpaque(user).takeUnretainedValue()
        return context.handle(section: String(cString: section), key: String(cString: key),
                              value: value.map { String(cString: $0) } ?? "") ? 1 : 0
    }

    func nextLine(into buffer: UnsafeMutablePointer<CChar>, size: Int) -> UnsafeMutablePointer<CChar>? {
        guard firstError == nil, offset < bytes.count else { return nil }
        var end = offset
        while end < bytes.count && bytes[end] != 0x0A { end += 1 }
        if end < bytes.count { end += 1 }  // keep the newline, as fgets does
        lineText = Array(bytes[offset..<end])
        offset = end
        line += 1
        if lineText.contains(0) {
            fail("contains a NUL byte; the config file must be text")
            return nil
        }
        // inih needs room for the line, CR, LF and NUL. A longer `key = value` line (a long allow-regex)
        // is read here by inih's rules, and inih is handed the key with an empty value.
        var handed = lineText
        if lineText.count + 1 > size {
            // The line's characters, without its line end.
            let length = lineText.count - (lineText.last == 0x0A ? 1 : 0) - (lineText.dropLast().last == 0x0D ? 1 : 0)
            guard length <= Self.maxLineLength else {
                fail("line is longer than \(Self.maxLineLength) characters")
                return nil
            }
            switch longLine() {
            case .comment:
                handed = [0x0A]
            case .assignment(let key, let value):
                longValues[line] = value
                handed = Array("\(key) =\n".utf8)
            case .other:
                fail("a line of \(length) characters must be `key = value` or a comment")
                return nil
            }
            guard handed.count + 1 <= size else {
                fail("the key is too long")
                return nil
            }
        }
        checkSectionHeader()
        handed.withUnsafeBufferPointer { source in
            for (i, byte) in source.enumerated() { buffer[i] = CChar(bitPattern: byte) }
        }
        buffer[handed.count] = 0
        return buffer
    }

    /// A line too long for inih, split as inih 55 splits one: blanks trimmed; a comment (`;` or `#` first)
    /// is skipped; a section that long is refused; the key ends at the first `=` or `:`, the value at a `;`
    /// that follows a blank (an inline comment); both trimmed.
    enum LongLine {
        case comment
        case assignment(key: String, value: String)
        case other
    }

    func longLine() -> LongLine {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }
        var text = lineText[...]
        while let last = text.last, isSpace(last) { text = text.dropLast() }
        while let first = text.first, isSpace(first) { text = text.dropFirst() }
        guard let first = text.first else { return .comment }
        if first == UInt8(ascii: ";") || first == UInt8(ascii: "#") { return .comment }
        if first == UInt8(ascii: "[") { return .other }
        // find_chars_or_comment: stops at a delimiter, or at a `;` after a blank.
        func stop(_ slice: ArraySlice<UInt8>, delimiters: Bool) -> ArraySlice<UInt8>.Index {
            var wasSpace = false
            for i in slice.indices {
                let b = slice[i]
                if delimiters && (b == UInt8(ascii: "=") || b == UInt8(ascii: ":")) { return i }
                if wasSpace && b == UInt8(ascii: ";") { return i }
                wasSpace = isSpace(b)
            }
            return slice.endIndex
        }
        let delimiter = stop(text, delimiters: true)
        guard delimiter < text.endIndex, text[delimiter] != UInt8(ascii: ";") else { return .other }
        var key = text[..<delimiter]
        while let last = key.last, isSpace(last) { key = key.dropLast() }
        var value = text[(delimiter + 1)...]
        value = value[..<stop(value, delimiters: false)]
        while let f = value.first, isSpace(f) { value = value.dropFirst() }
        while let l = value.last, isSpace(l) { value = value.dropLast() }
        return .assignment(key: String(decoding: key, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
    }

    /// Reports unknown sections on their header line, even when no key follows them. inih's own rule:
    /// a line whose first non-blank character is `[` names the section up to the `]`.
    private func checkSectionHeader() {
        let text = String(decoding: lineText, as: UTF8.self)
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        guard trimmed.first == "[", let close = trimmed.firstIndex(of: "]") else { return }
        let section = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
        if self.section(named: section) == nil {
            fail("unknown section [\(section)] (sections: \(sectionList))")
        }
    }

    func handle(section: String, key: String, value rawValue: String) -> Bool {
        guard firstError == nil else { return false }
        if let last = lastHandled, last == (section, key), let first = lineText.first, first == 0x20 || first == 0x09 {
            fail("[\(section)] \(key): indented continuation lines are not supported; put the value on one line")
            return false
        }
        lastHandled = (section, key)
        guard let configSection = self.section(named: section) else {
            if section.isEmpty {
                let home = table.first { $0.name == key }.map { "; it belongs in [\($0.section.rawValue)]" } ?? ""
                fail("key '\(key)' is outside any section\(home) (sections: \(sectionList))")
            } else {
                fail("unknown section [\(section)] (sections: \(sectionList))")
            }
            return false
        }
        guard let option = table.first(where: { $0.name == key }) else {
            let keys = table.filter { $0.section == configSection }.map(\.name)
            let allowed = keys.isEmpty ? "no keys are defined in [\(section)]" : "keys in [\(section)]: \(keys.joined(separator: ", "))"
            fail("unknown key '\(key)' in [\(section)] (\(allowed))")
            return false
        }
        guard option.section == configSection else {
            fail("key '\(key)' belongs in [\(option.section.rawValue)], not [\(section)]")
            return false
        }
        if !option.repeatable, let first = firstLineOfOption[key] {
            fail("[\(section)] \(key) is set twice (first on line \(first)); keep one")
            return false
        }
        let value = ConfigValue.unquote(longValues[line] ?? rawValue)
        // check-config writes `key = value` (quoted if needed): it must fit in a line inih can read back.
        if ConfigFileRendering.assignment(key, value).utf8.count > lineLimit {
            fail("[\(section)] \(key): value is too long ('\(key) = VALUE' must fit in \(lineLimit) characters on one line)")
            return false
        }
        firstLineOfOption[key] = firstLineOfOption[key] ?? line
        entries.append(ConfigEntry(option: option, value: value, line: line))
        return true
    }
}

/// Values in the file: inih strips blanks and `;` comments; a value in double quotes keeps its blanks
/// and `;` (`serial-prefix = " "`). The quotes are removed; nothing else is unescaped here.
enum ConfigValue {
    static func unquote(_ value: String) -> String {
        if value.count >= 2, value.first == "\"", value.last == "\"" {
            return String(value.dropFirst().dropLast())
        }
        return value
    }

    /// Writes a value so that `unquote(inih(value)) == value`.
    static func quoteIfNeeded(_ value: String) -> String {
        guard let first = value.first, let last = value.last else { return value }
        // inih strips every isspace() byte at both ends (space, \t, \n, \v, \f, \r): keep them in quotes.
        let blank: (Character) -> Bool = { c in c.unicodeScalars.allSatisfy { [0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D].contains($0.value) } }
        let needsQuotes = blank(first) || blank(last) || value.contains(";")
            || value.contains("#") || (first == "\"" && last == "\"" && value.count >= 2)
        return needsQuotes ? "\"\(value)\"" : value
    }
}

/// Reads the config file whole: a regular file (or a link to one) of at most `FileSizeLimit.config`
/// (256 KB; the commented example is ~9 KB), checked before and while reading. A FIFO, a device, a
/// socket or a folder is refused without being opened for reading, so a FIFO cannot block start-up.
enum ConfigFileReader {
    static let limit = FileSizeLimit.config

    static func readAll(path: String) throws(BoundedFileError) -> [UInt8] {
        try BoundedFile.readAll(path: path, limit: limit)
    }
}

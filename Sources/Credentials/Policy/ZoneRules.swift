import Platform

/// A time zone that could not be loaded: one line naming the zone (and its file) and what is wrong.
public struct ZoneRulesError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// Wall time at one instant in one zone.
public struct LocalTime: Equatable, Sendable {
    /// The civil (proleptic Gregorian) date.
    public let year: Int
    public let month: Int
    public let day: Int
    /// 0 = Monday ... 6 = Sunday.
    public let weekday: Int
    /// 0...1439.
    public let minuteOfDay: Int
    /// 0...59 (POSIX time has no leap seconds).
    public let second: Int
    /// Seconds east of UTC in force.
    public let utcOffset: Int
    /// "CET", "CEST", "+0330", "LMT", ...
    public let abbreviation: String

    public init(year: Int, month: Int, day: Int, weekday: Int, minuteOfDay: Int, second: Int, utcOffset: Int, abbreviation: String) {
        self.year = year
        self.month = month
        self.day = day
        self.weekday = weekday
        self.minuteOfDay = minuteOfDay
        self.second = second
        self.utcOffset = utcOffset
        self.abbreviation = abbreviation
    }
}

/// The rules of one IANA time zone, read from the system's tzdata (TZif files, RFC 8536, versions 1 to 4):
/// turns a UTC instant (POSIX seconds) into the local wall time there.
///
/// - Before the first transition: local time type 0 (RFC 8536 §3.2; zic writes the zone's earliest time
///   there, normally its local mean time).
/// - From one transition to the next: the type of the latest transition at or before the instant.
/// - On and after the last transition: the footer's POSIX TZ string (version 2 and later), or, when the
///   footer is empty or the file is version 1, the last transition's type. A zone with no transitions
///   uses its footer, else type 0.
///
/// Files with leap-second records (the "right/" zones, for clocks that count leap seconds) are refused: the
/// system clock is POSIX time, and their transition times would be off by the leap seconds so far.
public struct ZoneRules: Sendable {
    /// The IANA name ("Europe/Berlin").
    public let name: String

    /// One local time type of the file.
    struct LocalType: Sendable, Equatable {
        let utcOffset: Int
        let isDST: Bool
        let abbreviation: String
    }

    /// Transition instants, strictly ascending.
    let transitions: [Int64]
    /// For each transition, its index into `types`.
    let transitionTypes: [Int]
    /// At least one.
    let types: [LocalType]
    /// Nil: none, or empty.
    let footer: PosixTZRule?

    init(name: String, transitions: [Int64], transitionTypes: [Int], types: [LocalType], footer: PosixTZRule?) {
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.types = types
        self.footer = footer
    }

    /// Where the system keeps its tzdata (Debian's tzdata package).
    public static let defaultDirectory = "/usr/share/zoneinfo"

    /// How large a zone file may be (the largest of Debian's is a few KB).
    public static let fileLimit = FileSizeLimit(bytes: 256 << 10, kind: "time zone files")

    /// UTC: offset 0 at every instant, abbreviation "UTC".
    public static let utc = ZoneRules(name: "UTC", transitions: [], transitionTypes: [],
                                      types: [LocalType(utcOffset: 0, isDST: false, abbreviation: "UTC")], footer: nil)

    /// Loads the zone `name` from `directory`. The name must be an IANA name: parts of letters, digits, '_',
    /// '+' and '-' separated by single '/', not absolute, no "." or ".." part, at most 255 bytes (so it
    /// cannot leave `directory`). The file, DIRECTORY/NAME, is read whole (at most `fileLimit`, a regular
    /// file or a symbolic link to one) and parsed as `parse` does. Errors name the zone and the path.
    public static func load(name: String, directory: String = defaultDirectory) throws(ZoneRulesError) -> ZoneRules {
        try validate(name: name)
        let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.readAll(path: path, limit: fileLimit)
        } catch {
            throw ZoneRulesError(message: "time zone \(name): cannot read \(path): \(error.reasonText)")
        }
        return try parse(bytes, name: name, subject: "time zone \(name) (\(path))")
    }

    /// Parses the bytes of a TZif file for the zone `name` (used in errors and kept as `name`). In a version
    /// 2 or later file the version 1 data is skipped and the 64-bit data and the footer are used. Every
    /// count is checked against the bytes there are before anything is read; anything malformed throws an
    /// error that says what is wrong.
    public static func parse(_ bytes: [UInt8], name: String) throws(ZoneRulesError) -> ZoneRules {
        try parse(bytes, name: name, subject: "time zone \(ZoneText.quoted(name.utf8[...]))")
    }

    /// Seconds east of UTC in force at `unixSeconds`.
    public func utcOffset(at unixSeconds: Int64) -> Int {
        period(at: unixSeconds).utcOffset
    }

    /// The wall time at `unixSeconds` (any Int64: the year may be far from today, but nothing overflows).
    public func localTime(at unixSeconds: Int64) -> LocalTime {
        let type = period(at: unixSeconds)
        // Days and seconds since the epoch, floored (no multiplication back: Int64.min must not overflow).
        var utcDays = unixSeconds / 86400
        var utcSecond = Int(unixSeconds % 86400)
        if utcSecond < 0 {
            utcDays -= 1
            utcSecond += 86400
        }
        let shifted = utcSecond + type.utcOffset
        let days = Int(utcDays) + Int(CivilCalendar.floorDiv(Int64(shifted), 86400))
        let secondOfDay = CivilCalendar.floorMod(shifted, 86400)
        let date = CivilCalendar.civil(fromDays: days)
        return LocalTime(year: date.year, month: date.month, day: date.day,
                         weekday: CivilCalendar.floorMod(days + 3, 7),   // 1970-01-01 was a Thursday
                         minuteOfDay: secondOfDay / 60, second: secondOfDay % 60,
                         utcOffset: type.utcOffset, abbreviation: type.abbreviation)
    }

    /// The local time type in force at `t`.
    func period(at t: Int64) -> LocalType {
        guard let first = transitions.first, let last = transitions.last else {
            if let footer { return LocalType(footer.period(at: t)) }
            return types[0]
        }
        if t < first { return types[0] }
        if t >= last {
            if let footer { return LocalType(footer.period(at: t)) }
            return types[transitionTypes[transitions.count - 1]]
        }
        // The latest transition at or before t: transitions[low] <= t < transitions[high].
        var low = 0, high = transitions.count - 1
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if transitions[middle] <= t { low = middle } else { high = middle }
        }
        return types[transitionTypes[low]]
    }

    // MARK: Names

    /// Refuses a name that is not an IANA zone name (see `load`).
    static func validate(name: String) throws(ZoneRulesError) {
        let bytes = Array(name.utf8)
        let allowed = "time zone names are IANA names like Europe/Berlin: parts of letters, digits, '_', '+' and '-' separated by '/'"
        guard !bytes.isEmpty else {
            throw ZoneRulesError(message: "the time zone name is empty; \(allowed)")
        }
        let shown = ZoneText.quoted(bytes[...])
        guard bytes.count <= 255 else {
            throw ZoneRulesError(message: "time zone name \(shown) is \(bytes.count) bytes; names are at most 255 bytes")
        }
        if bytes[0] == UInt8(ascii: "/") {
            throw ZoneRulesError(message: "time zone name \(shown) is an absolute path; \(allowed), read under the zoneinfo folder")
        }
        for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if part.isEmpty {
                throw ZoneRulesError(message: "time zone name \(shown) has an empty part (a '/' at the end or '//'); \(allowed)")
            }
            if part.elementsEqual([UInt8(ascii: ".")]) || part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                throw ZoneRulesError(message: "time zone name \(shown) has a '\(String(decoding: part, as: UTF8.self))' part; \(allowed)")
            }
            for c in part where !ZoneText.isNameByte(c) {
                throw ZoneRulesError(message: "time zone name \(shown) holds \(ZoneText.describe(byte: c)); \(allowed)")
            }
        }
    }

    // MARK: TZif

    /// The counts of a TZif header (RFC 8536 §3.1).
    private struct Header {
        let version: UInt8
        let isutcnt: Int, isstdcnt: Int, leapcnt: Int, timecnt: Int, typecnt: Int, charcnt: Int

        static let size = 44

        /// Bytes of the data block that follows, with `timeSize`-byte times (4 in version 1, 8 after).
        func blockSize(timeSize: Int) -> Int {
            timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
        }

        var countsText: String {
            "\(timecnt) transitions, \(typecnt) types, \(charcnt) abbreviation bytes, \(leapcnt) leap seconds, \(isstdcnt) standard/wall and \(isutcnt) UT/local indicators"
        }
    }

    /// Reads big-endian fields from `bytes`; every read is checked by the caller against the block size first.
    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func u8() -> UInt8 {
            defer { position += 1 }
            return bytes[position]
        }

        mutating func u32() -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 { value = value << 8 | UInt32(u8()) }
            return value
        }

        mutating func i64() -> Int64 {
            var value: UInt64 = 0
            for _ in 0..<8 { value = value << 8 | UInt64(u8()) }
            return Int64(bitPattern: value)
        }

        mutating func time(size: Int) -> Int64 {
            size == 8 ? i64() : Int64(Int32(bitPattern: u32()))
        }
    }

    static func parse(_ bytes: [UInt8], name: String, subject: String) throws(ZoneRulesError) -> ZoneRules {
        func fail(_ what: String) -> ZoneRulesError { ZoneRulesError(message: "\(subject): \(what)") }

        func header(at offset: Int, which: String) throws(ZoneRulesError) -> Header {
            let available = bytes.count - offset
            guard available >= Header.size else {
                throw fail("truncated \(which) header: \(available) bytes where a TZif header takes \(Header.size)")
            }
            guard bytes[offset..<offset + 4].elementsEqual("TZif".utf8) else {
                throw fail("bad magic in the \(which) header: \(ZoneText.quoted(bytes[offset..<offset + 4])) where a TZif file has \"TZif\"")
            }
            let version = bytes[offset + 4]
            guard version == 0 || (version >= UInt8(ascii: "2") && version <= UInt8(ascii: "4")) else {
                throw fail("unknown TZif version \(ZoneText.describe(byte: version)); versions 1 to 4 are read")
            }
            var reader = Reader(bytes: bytes, position: offset + 20)
            var counts: [Int] = []
            for _ in 0..<6 { counts.append(Int(reader.u32())) }
            return Header(version: version, isutcnt: counts[0], isstdcnt: counts[1], leapcnt: counts[2],
                          timecnt: counts[3], typecnt: counts[4], charcnt: counts[5])
        }

        func checkFits(_ h: Header, at offset: Int, timeSize: Int, which: String) throws(ZoneRulesError) {
            let needed = h.blockSize(timeSize: timeSize)   // at most ~5e10: no overflow in Int
            let available = bytes.count - offset
            guard needed <= available else {
                throw fail("the \(which) header counts \(h.countsText): \(needed) bytes of data, but the file has \(available) after the header (truncated, or bad counts)")
            }
        }

        let first = try header(at: 0, which: "first")
        var blockStart = Header.size
        var used = first
        var timeSize = 4
        if first.version != 0 {
            // Skip the version 1 data (only its size matters), then read the second header.
            try checkFits(first, at: blockStart, timeSize: 4, which: "version 1")
            let second = Header.size + first.blockSize(timeSize: 4)
            used = try header(at: second, which: "second (64-bit)")
            blockStart = second + Header.size
            timeSize = 8
        }
        let h = used
        guard h.typecnt >= 1 else { throw fail("the header counts no local time types; a TZif file has at least one") }
        guard h.charcnt >= 1 else { throw fail("the header counts no abbreviation bytes; a TZif file has at least one") }
        guard h.isutcnt == 0 || h.isutcnt == h.typecnt else {
            throw fail("the header counts \(h.isutcnt) UT/local indicators for \(h.typecnt) types; it must be 0 or the type count")
        }
        guard h.isstdcnt == 0 || h.isstdcnt == h.typecnt else {
            throw fail("the header counts \(h.isstdcnt) standard/wall indicators for \(h.typecnt) types; it must be 0 or the type count")
        }
        try checkFits(h, at: blockStart, timeSize: timeSize, which: timeSize == 8 ? "second (64-bit)" : "version 1")
        guard h.leapcnt == 0 else {
            throw fail("the file has \(h.leapcnt) leap-second records (a \"right/\" zone, for clocks that count leap seconds); the system clock is POSIX time: use the zone without \"right/\"")
        }

        var reader = Reader(bytes: bytes, position: blockStart)
        var transitions: [Int64] = []
        transitions.reserveCapacity(h.timecnt)
        for i in 0..<h.timecnt {
            let t = reader.time(size: timeSize)
            if let previous = transitions.last, t <= previous {
                throw fail("transition \(i) (\(t)) is not after transition \(i - 1) (\(previous)); transition times must ascend")
            }
            transitions.append(t)
        }
        var transitionTypes: [Int] = []
        transitionTypes.reserveCapacity(h.timecnt)
        for i in 0..<h.timecnt {
            let index = Int(reader.u8())
            guard index < h.typecnt else {
                throw fail("transition \(i) refers to local time type \(index), but the file has \(h.typecnt) types (0...\(h.typecnt - 1))")
            }
            transitionTypes.append(index)
        }
        var rawTypes: [(utcOffset: Int32, isDST: UInt8, abbreviationIndex: Int)] = []
        rawTypes.reserveCapacity(h.typecnt)
        for _ in 0..<h.typecnt {
            let offset = Int32(bitPattern: reader.u32())
            let isDST = reader.u8()
            let abbreviationIndex = Int(reader.u8())
            rawTypes.append((offset, isDST, abbreviationIndex))
        }
        let characters = Array(bytes[reader.position..<reader.position + h.charcnt])
        reader.position += h.charcnt
        var types: [LocalType] = []
        types.reserveCapacity(h.typecnt)
        for (i, raw) in rawTypes.enumerated() {
            // RFC 8536 §3.2: more than -25 and less than 26 hours (-2^31 is forbidden outright).
            guard raw.utcOffset > -90_000 && raw.utcOffset < 93_600 else {
                throw fail("local time type \(i) has the UT offset \(raw.utcOffset) s; RFC 8536 wants it more than -25 and less than 26 hours")
            }
            guard raw.isDST <= 1 else {
                throw fail("local time type \(i) has the DST flag \(raw.isDST); it must be 0 or 1")
            }
            guard raw.abbreviationIndex < h.charcnt else {
                throw fail("local time type \(i) has its abbreviation at byte \(raw.abbreviationIndex), past the \(h.charcnt) abbreviation bytes")
            }
            guard let end = characters[raw.abbreviationIndex...].firstIndex(of: 0) else {
                throw fail("local time type \(i) has an abbreviation (at byte \(raw.abbreviationIndex)) with no terminating NUL")
            }
            types.append(LocalType(utcOffset: Int(raw.utcOffset), isDST: raw.isDST == 1,
                                   abbreviation: String(decoding: characters[raw.abbreviationIndex..<end], as: UTF8.self)))
        }
        // No leap-second records (refused above); the indicators only matter for a TZ string without rules.
        for (count, label) in [(h.isstdcnt, "standard/wall"), (h.isutcnt, "UT/local")] {
            for i in 0..<count {
                let flag = reader.u8()
                guard flag <= 1 else { throw fail("\(label) indicator \(i) is \(flag); it must be 0 or 1") }
            }
        }

        var footer: PosixTZRule?
        var end = reader.position
        if timeSize == 8 {
            // The footer: "\n" TZ-string "\n".
            guard end < bytes.count else { throw fail("truncated: the footer (a TZ string between newlines) is missing after the 64-bit data") }
            guard bytes[end] == UInt8(ascii: "\n") else {
                throw fail("bad footer: \(ZoneText.describe(byte: bytes[end])) where a newline should start it (bad counts?)")
            }
            guard let close = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw fail("truncated footer: no newline ends the TZ string \(ZoneText.quoted(bytes[(end + 1)...]))")
            }
            let text = bytes[(end + 1)..<close]
            if !text.isEmpty {
                guard let string = String(validating: text, as: UTF8.self) else {
                    throw fail("bad footer TZ string \(ZoneText.quoted(text)): not UTF-8")
                }
                do {
                    footer = try PosixTZRule(parsing: string)
                } catch {
                    throw fail("bad footer TZ string \(ZoneText.quoted(text)): \(error.message)")
                }
            }
            end = close + 1
        }
        guard end == bytes.count else {
            throw fail("\(bytes.count - end) unexpected bytes after the \(timeSize == 8 ? "footer" : "version 1 data") (bad counts?)")
        }
        return ZoneRules(name: name, transitions: transitions, transitionTypes: transitionTypes, types: types, footer: footer)
    }
}

extension ZoneRules.LocalType {
    init(_ period: PosixTZRule.Period) {
        self.init(utcOffset: period.utcOffset, isDST: period.isDST, abbreviation: period.abbreviation)
    }
}

/// Days and civil dates in the proleptic Gregorian calendar, counted from 1970-01-01 (day 0). The
/// conversions are Howard Hinnant's public-domain days_from_civil / civil_from_days method, written anew:
/// years are shifted to start on March 1 (so the leap day is the last of a year), and counted in eras
/// of 400 years (146097 days).
enum CivilCalendar {
    static let daysPer400Years = 146097
    /// Days from 0000-03-01 to 1970-01-01.
    private static let epochShift = 719468

    static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysIn(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1...12, day 1...31).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year                 // the March-based year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400                         // 0...399
        let monthFromMarch = (month + 9) % 12                 // March = 0 ... February = 11
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * daysPer400Years + dayOfEra - epochShift
    }

    /// The civil date `days` after 1970-01-01 (any Int whose era count fits: |days| < 2^60).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + epochShift
        let era = floorDiv(shifted, daysPer400Years)
        let dayOfEra = shifted - era * daysPer400Years                                              // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365    // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)              // 0...365
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func floorDiv(_ a: Int, _ b: Int) -> Int {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    static func floorMod(_ a: Int, _ b: Int) -> Int {
        let r = a % b
        return r != 0 && (r < 0) != (b < 0) ? r + b : r
    }
}

/// Names and file bytes shown in error messages.
enum ZoneText {
    /// A byte allowed in a zone name's part: [A-Za-z0-9_+-].
    static func isNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// "'x'" for a printable ASCII byte, else "the byte 0x00".
    static func describe(byte c: UInt8) -> String {
        c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "the byte 0x\(c < 16 ? "0" : "")\(String(c, radix: 16))"
    }

    /// Quoted, printable ASCII as is and other bytes as \xNN, cut after 48 bytes ("...(300 bytes)").
    static func quoted<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var text = "\""
        for c in bytes.prefix(48) {
            if c >= 0x20 && c < 0x7F && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(c))
            } else {
                text += "\\x\(c < 16 ? "0" : "")\(String(c, radix: 16))"
            }
        }
        text += "\""
        if bytes.count > 48 { text += "...(\(bytes.count) bytes)" }
        return text
    }
}

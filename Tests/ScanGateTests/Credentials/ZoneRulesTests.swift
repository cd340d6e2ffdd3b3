import Core
@testable import Credentials
import Foundation
import XCTest

/// ZoneRules against two independent readings of the same tzdata: Python's zoneinfo (the system's files,
/// and files built here with unusual footers) and glibc's TZ-string rules; then names that must be refused
/// and hostile files (every truncation, flipped counts, random bytes), which must throw and never crash.
final class ZoneRulesTests: XCTestCase {
    static let zones = [
        "Europe/Berlin", "Europe/London", "America/New_York", "America/Sao_Paulo", "Australia/Sydney",
        "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham", "Africa/Casablanca", "America/Santiago",
        "Pacific/Apia", "Asia/Tehran", "UTC", "Etc/GMT+5", "America/Nuuk", "Asia/Jerusalem", "Europe/Dublin",
        "Antarctica/Troll", "America/Havana", "Asia/Gaza",
    ]

    /// Instants every zone is checked at: 1900, 1970, 2038-2040 (past the tables: the footer decides), 2100,
    /// 2400, 300 spread over 1800-2500; then, per zone, the second of each offset change in 2026, 2027, 2039
    /// and 2100 (found by scanning hourly and halving), with every half hour for 3 hours either side.
    static let instantsPython = """
    def day(y, m, d): return int(datetime.datetime(y, m, d, tzinfo=datetime.timezone.utc).timestamp())
    fixed = [day(1900, 1, 1), day(1900, 7, 1) + 12345, 0, day(1970, 7, 1), 2**31 - 1, 2**31, day(2038, 7, 1),
             day(2039, 1, 1), day(2039, 7, 1), day(2040, 1, 1), day(2040, 7, 1) + 3599, day(2100, 1, 1), day(2100, 7, 1),
             day(2400, 1, 1), day(2400, 2, 29) + 86399, day(2400, 7, 1)]
    seed = 12345
    for _ in range(300):
        seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
        fixed.append(seed % (day(2500, 1, 1) - day(1800, 1, 1)) + day(1800, 1, 1))
    def instants(off, years=(2026, 2027, 2039, 2100)):
        found = set(fixed)
        for year in years:
            t, end = day(year, 1, 1) - 86400, day(year + 1, 1, 1) + 86400
            while t < end:
                if off(t) != off(t + 3600):
                    lo, hi = t, t + 3600
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        if off(mid) == off(lo): lo = mid
                        else: hi = mid
                    found.update(hi + k * 1800 for k in range(-6, 7))
                    found.update((hi - 1, hi + 1))
                t += 3600
        return sorted(found)
    """

    /// argv: DIRECTORY NAME...; one line per instant: NAME T OFFSET Y M D h m s WEEKDAY ABBR (the offset is
    /// the local wall clock minus UTC, as fromutc gave it).
    static let zoneinfoPeer = """
    import sys, datetime, zoneinfo
    \(instantsPython)
    directory, names = sys.argv[1], sys.argv[2:]
    for name in names:
        with open(directory + "/" + name, "rb") as f:
            zone = zoneinfo.ZoneInfo.from_file(f, key=name)
        off = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
        for t in instants(off):
            d = datetime.datetime.fromtimestamp(t, zone)
            offset = int((d.replace(tzinfo=None) - datetime.datetime(1970, 1, 1)).total_seconds()) - t
            print(name, t, offset, d.year, d.month, d.day, d.hour, d.minute, d.second, d.weekday(), d.tzname())
    """

    /// argv: NAME=TZSTRING...; the same lines from glibc's localtime with TZ set (from 1970 on: glibc does not
    /// apply the rules to earlier years).
    static let glibcPeer = """
    import sys, os, time, datetime
    \(instantsPython)
    for arg in sys.argv[1:]:
        name, tz = arg.split("=", 1)
        os.environ["TZ"] = tz
        time.tzset()
        for t in instants(lambda t: time.localtime(t).tm_gmtoff, years=(1970, 2026, 2027, 2039, 2100, 2400)):
            if t < 0: continue
            l = time.localtime(t)
            print(name, t, l.tm_gmtoff, l.tm_year, l.tm_mon, l.tm_mday, l.tm_hour, l.tm_min, l.tm_sec, l.tm_wday, l.tm_zone)
    """

    /// Footers beyond the system's zones: version 3 times (negative, past 24 h, up to 167 h), 30-minute and
    /// second-precise offsets, daylight time over the new year, Jn days. Checked against zoneinfo and glibc.
    static let footers = [
        "EST5EDT,M3.2.0,M11.1.0", "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", "XXX3YYY,J60/-1,J300/26", "AAA-2BBB,0/0,365/25",
        "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "IST-2IDT,M3.4.4/26,M10.5.0", "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
        "<+0330>-3:30", "NZST-12NZDT,M9.5.0,M4.1.0/3", "<-00>0", "AEST-10AEDT,M10.1.0,M4.1.0/3", "CET-1CEST,M3.5.0,M10.5.0/3",
        "AAA0BBB-1,J58/0,J200/0",
    ]

    /// Footers checked against glibc only. Python 3.11's zoneinfo puts the zero-based day n one day early (n = 0
    /// on December 31) and J59 one day late in leap years (on February 29); and where a rule's end spills past
    /// the new year it keeps daylight time into January, while glibc (and ZoneRules) judge each instant by its
    /// own UTC year's start and end.
    static let footersGlibcOnly = [
        "EST5EDT,0/0,J365/25", "AAA+1:30:15BBB-2:00:30,59/167,300/-167", "AAA5BBB,100/2,200/2",
        "ABC-1DEF-3,M2.5.1/12:34:56,J59/0:00:01", "AAA0BBB-1,J59/0,J200/0", "AAA5BBB,M1.1.0/-20,M12.5.6/100",
    ]

    // MARK: Against Python and glibc

    func testEveryFieldAgreesWithPythonZoneinfo() throws {
        let lines = try python(Self.zoneinfoPeer, [ZoneRules.defaultDirectory] + Self.zones)
        let compared = try compare(lines) { name throws(ZoneRulesError) in try ZoneRules.load(name: name) }
        for zone in Self.zones {
            XCTAssertGreaterThanOrEqual(compared[zone] ?? 0, 300, zone)
        }
        let total = compared.values.reduce(0, +)
        print("ZoneRules: \(total) instants in \(compared.count) zones agree with Python's zoneinfo")
    }

    func testFootersAgreeWithZoneinfoAndGlibc() throws {
        let folder = try TestFiles.temporaryDirectory()
        let all = Self.footers + Self.footersGlibcOnly
        let names = all.indices.map { "F\($0)" }
        for (name, footer) in zip(names, all) {
            try TestFiles.write(bytes: TZifFile(footer: footer).bytes, to: "\(folder)/\(name)")
        }
        let load = { (name: String) throws(ZoneRulesError) -> ZoneRules in try ZoneRules.load(name: name, directory: folder) }
        let byZoneinfo = try compare(try python(Self.zoneinfoPeer, [folder] + names.prefix(Self.footers.count)), load: load)
        let byGlibc = try compare(try python(Self.glibcPeer, zip(names, all).map { "\($0)=\($1)" }), load: load)
        for (i, name) in names.enumerated() {
            if i < Self.footers.count { XCTAssertGreaterThanOrEqual(byZoneinfo[name] ?? 0, 300, all[i]) }
            XCTAssertGreaterThanOrEqual(byGlibc[name] ?? 0, 100, all[i])
        }
        print("ZoneRules: \(byZoneinfo.values.reduce(0, +)) instants agree with zoneinfo on \(Self.footers.count) footers, \(byGlibc.values.reduce(0, +)) with glibc on \(all.count)")
    }

    /// Runs python3 (from PATH) with `script` and `arguments`; its output lines.
    private func python(_ script: String, _ arguments: [String]) throws -> [String] {
        let result = try TestProcess.run("/usr/bin/env", ["python3", "-c", script] + arguments, timeout: 300)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdoutLines
    }

    /// Compares each peer line with ZoneRules' answer; the number of instants compared per zone.
    private func compare(_ lines: [String], load: (String) throws(ZoneRulesError) -> ZoneRules,
                         file: StaticString = #filePath, line: UInt = #line) throws -> [String: Int] {
        var rules: [String: ZoneRules] = [:]
        var counts: [String: Int] = [:]
        var mismatches: [String] = []
        for text in lines {
            let fields = text.split(separator: " ").map(String.init)
            guard fields.count == 11, let t = Int64(fields[1]) else {
                XCTFail("peer line \(text)", file: file, line: line)
                continue
            }
            let name = fields[0]
            let zone: ZoneRules
            if let known = rules[name] {
                zone = known
            } else {
                zone = try load(name)
                rules[name] = zone
            }
            let l = zone.localTime(at: t)
            let mine = "\(name) \(t) \(l.utcOffset) \(l.year) \(l.month) \(l.day) \(l.minuteOfDay / 60) \(l.minuteOfDay % 60) \(l.second) \(l.weekday) \(l.abbreviation)"
            if mine != text || zone.utcOffset(at: t) != l.utcOffset {
                mismatches.append("peer: \(text)\n  us: \(mine)")
            }
            counts[name, default: 0] += 1
        }
        XCTAssertEqual(mismatches.count, 0, "\(mismatches.count) of \(lines.count) differ:\n" + mismatches.prefix(20).joined(separator: "\n"),
                       file: file, line: line)
        return counts
    }

    // MARK: Names and files

    func testRefusesNamesThatAreNotZoneNames() {
        let bad = ["../etc/passwd", "/etc/localtime", "Europe/../x", "", "Europe/Berlin\0", String(repeating: "A/", count: 150),
                   "Europe//Berlin", "Europe/", "./UTC", "Europe/Ber lin", "Europe\\Berlin", "Éurope/Berlin", ".."]
        for name in bad {
            XCTAssertThrowsError(try ZoneRules.load(name: name), name) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("time zone name"), text)
                XCTAssertTrue(text.contains("IANA") || text.contains("255 bytes"), text)
            }
        }
        XCTAssertThrowsError(try ZoneRules.load(name: String(repeating: "x", count: 300))) {
            XCTAssertTrue("\($0)".contains("300 bytes"), "\($0)")
        }
        XCTAssertThrowsError(try ZoneRules.load(name: "Europe/Berlin\0")) {
            XCTAssertTrue("\($0)".contains("0x00"), "\($0)")
        }
        for good in ["Europe/Berlin", "Etc/GMT+5", "Etc/GMT-14", "America/Argentina/Buenos_Aires", "UTC"] {
            XCTAssertNoThrow(try ZoneRules.load(name: good), good)
        }
    }

    func testMissingZoneAndFolderAreNamed() {
        XCTAssertThrowsError(try ZoneRules.load(name: "Europe/Atlantis")) { error in
            XCTAssertEqual("\(error)", "time zone Europe/Atlantis: cannot read /usr/share/zoneinfo/Europe/Atlantis: No such file or directory (ENOENT)")
        }
        XCTAssertThrowsError(try ZoneRules.load(name: "Europe")) { error in
            XCTAssertTrue("\(error)".contains("/usr/share/zoneinfo/Europe: it is a directory"), "\(error)")
        }
        XCTAssertThrowsError(try ZoneRules.load(name: "UTC", directory: "/nonexistent/")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/UTC"), "\(error)")
        }
    }

    func testLeapSecondFilesAreRefused() throws {
        var file = TZifFile(footer: "UTC0")
        file.leapSeconds = [(78796800, 1), (94694401, 2)]
        XCTAssertThrowsError(try ZoneRules.parse(file.bytes, name: "Test/Leap")) { error in
            XCTAssertTrue("\(error)".contains("Test/Leap"), "\(error)")
            XCTAssertTrue("\(error)".contains("2 leap-second records"), "\(error)")
        }
        if FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/right/Europe/Berlin") {
            XCTAssertThrowsError(try ZoneRules.load(name: "right/Europe/Berlin")) {
                XCTAssertTrue("\($0)".contains("right/"), "\($0)")
            }
        }
    }

    // MARK: Hostile files

    func testEveryTruncationThrows() throws {
        for name in ["Europe/Berlin", "America/Sao_Paulo", "Etc/GMT+5", "UTC"] {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ZoneRules.defaultDirectory + "/" + name)))
            XCTAssertNoThrow(try ZoneRules.parse(bytes, name: name))
            for length in 0..<bytes.count {
                XCTAssertThrowsError(try ZoneRules.parse(Array(bytes[0..<length]), name: name), "\(name) cut to \(length)") { error in
                    XCTAssertTrue("\(error)".hasPrefix("time zone \"\(name)\": "), "\(error)")
                }
            }
            // And with a byte too many.
            XCTAssertThrowsError(try ZoneRules.parse(bytes + [0x0A], name: name)) {
                XCTAssertTrue("\($0)".contains("unexpected bytes"), "\($0)")
            }
        }
        XCTAssertThrowsError(try ZoneRules.parse([], name: "Empty")) {
            XCTAssertEqual("\($0)", "time zone \"Empty\": truncated first header: 0 bytes where a TZif header takes 44")
        }
    }

    func testFlippedCountsThrow() throws {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ZoneRules.defaultDirectory + "/Europe/Berlin")))
        let original = try ZoneRules.parse(bytes, name: "Europe/Berlin")
        // The second header follows the version 1 data; both headers' six counts, each bit flipped.
        let v1 = TZifCounts(bytes, at: 0)
        let second = 44 + v1.blockSize(timeSize: 4)
        XCTAssertEqual(Array(bytes[second..<second + 4]), Array("TZif".utf8))
        var parsed = 0
        for header in [0, second] {
            for field in 0..<6 {
                for bit in 0..<32 {
                    var copy = bytes
                    copy[header + 20 + field * 4 + 3 - bit / 8] ^= UInt8(1 << (bit % 8))
                    if let rules = try? ZoneRules.parse(copy, name: "Europe/Berlin") {
                        parsed += 1
                        _ = rules.localTime(at: 1_800_000_000)
                    }
                }
            }
        }
        XCTAssertEqual(parsed, 0, "\(parsed) of 384 flipped counts still parsed")
        XCTAssertEqual(original.localTime(at: 1_784_000_000).abbreviation, "CEST")   // July 2026
    }

    func testRandomlyDamagedFilesNeverCrash() throws {
        var seed: UInt64 = 0x2545F4914F6CDD1D
        func next() -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        for name in ["Europe/Berlin", "Australia/Lord_Howe", "America/Santiago"] {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ZoneRules.defaultDirectory + "/" + name)))
            for _ in 0..<3000 {
                var copy = bytes
                for _ in 0..<(1 + next() % 4) {
                    copy[next() % copy.count] = UInt8(truncatingIfNeeded: next())
                }
                if let rules = try? ZoneRules.parse(copy, name: name) {
                    for t: Int64 in [.min, -1 << 40, -2_208_988_800, 0, 1_800_000_000, 1 << 40, .max] {
                        let l = rules.localTime(at: t)
                        XCTAssertTrue((0..<1440).contains(l.minuteOfDay) && (0..<60).contains(l.second) && (0..<7).contains(l.weekday))
                    }
                }
            }
        }
    }

    func testMalformedPartsAreNamed() throws {
        func message(_ bytes: [UInt8]) -> String {
            do {
                _ = try ZoneRules.parse(bytes, name: "Test/Zone")
                return "parsed"
            } catch {
                return error.message
            }
        }
        var file = TZifFile(footer: "CET-1CEST,M3.5.0,M10.5.0/3")
        file.transitions = [(-100, 1), (100, 0)]
        file.types = [(3600, 0, 0), (7200, 1, 4)]
        file.characters = Array("CET\0CEST\0".utf8)
        XCTAssertEqual(message(file.bytes), "parsed")

        var bad = file
        bad.transitions = [(-100, 1), (100, 2)]
        XCTAssertTrue(message(bad.bytes).contains("transition 1 refers to local time type 2, but the file has 2 types"), message(bad.bytes))
        bad = file
        bad.transitions = [(100, 1), (100, 0)]
        XCTAssertTrue(message(bad.bytes).contains("must ascend"), message(bad.bytes))
        bad = file
        bad.types = [(3600, 0, 0), (7200, 1, 9)]
        XCTAssertTrue(message(bad.bytes).contains("past the 9 abbreviation bytes"), message(bad.bytes))
        bad = file
        bad.characters = Array("CET\0CEST".utf8)
        XCTAssertTrue(message(bad.bytes).contains("no terminating NUL"), message(bad.bytes))
        bad = file
        bad.types = [(3600, 2, 0), (7200, 1, 4)]
        XCTAssertTrue(message(bad.bytes).contains("DST flag 2"), message(bad.bytes))
        bad = file
        bad.types = [(Int32.min, 0, 0), (7200, 1, 4)]
        XCTAssertTrue(message(bad.bytes).contains("UT offset -2147483648 s; RFC 8536 wants it more than -25 and less than 26 hours"), message(bad.bytes))
        bad.types = [(3600, 0, 0), (93_600, 1, 4)]
        XCTAssertTrue(message(bad.bytes).contains("local time type 1 has the UT offset 93600 s"), message(bad.bytes))
        bad.types = [(-90_000, 0, 0), (7200, 1, 4)]
        XCTAssertTrue(message(bad.bytes).contains("local time type 0 has the UT offset -90000 s"), message(bad.bytes))
        bad = file
        bad.footer = "CET-1CEST"
        XCTAssertTrue(message(bad.bytes).contains("bad footer TZ string \"CET-1CEST\": daylight time CEST has no rule"), message(bad.bytes))
        bad.footer = "CET-1CEST,M13.5.0,M10.5.0/3"
        XCTAssertTrue(message(bad.bytes).contains("month is 1...12"), message(bad.bytes))
        bad.footer = ""
        XCTAssertEqual(message(bad.bytes), "parsed")

        var bytes = file.bytes
        bytes[0] = UInt8(ascii: "X")
        XCTAssertEqual(message(bytes), "time zone \"Test/Zone\": bad magic in the first header: \"XZif\" where a TZif file has \"TZif\"")
        bytes = file.bytes
        bytes[4] = UInt8(ascii: "9")
        XCTAssertTrue(message(bytes).contains("unknown TZif version '9'"), message(bytes))
        bytes = file.bytes
        bytes[20 + 3 * 4] = 0x7F   // the version 1 timecnt
        XCTAssertTrue(message(bytes).contains("truncated, or bad counts"), message(bytes))
    }

    // MARK: Semantics

    func testVersion1FileWithoutFooter() throws {
        var file = TZifFile(footer: nil)
        file.version = 0
        file.transitions = [(-1_000_000, 1), (0, 2), (1_000_000, 1)]
        file.types = [(1800, 0, 0), (3600, 0, 4), (7200, 1, 8)]
        file.characters = Array("LMT\0AAA\0BBB\0".utf8)
        let rules = try ZoneRules.parse(file.bytes, name: "Test/V1")
        XCTAssertEqual(rules.localTime(at: -1_000_001).abbreviation, "LMT")   // before the first: type 0
        XCTAssertEqual(rules.utcOffset(at: -1_000_001), 1800)
        XCTAssertEqual(rules.localTime(at: -1_000_000).abbreviation, "AAA")
        XCTAssertEqual(rules.localTime(at: -1).abbreviation, "AAA")
        XCTAssertEqual(rules.localTime(at: 0).abbreviation, "BBB")
        XCTAssertEqual(rules.localTime(at: 999_999).utcOffset, 7200)
        XCTAssertEqual(rules.localTime(at: 1_000_000).abbreviation, "AAA")    // the last type stays
        XCTAssertEqual(rules.localTime(at: .max).abbreviation, "AAA")
        XCTAssertEqual(rules.localTime(at: 0),
                       LocalTime(year: 1970, month: 1, day: 1, weekday: 3, minuteOfDay: 120, second: 0, utcOffset: 7200, abbreviation: "BBB"))
        // 32-bit times are signed.
        file.transitions = [(-2_000_000_000, 1)]
        XCTAssertEqual(try ZoneRules.parse(file.bytes, name: "Test/V1").localTime(at: -1_999_999_999).abbreviation, "AAA")
        // Version 1 data followed by anything is refused.
        XCTAssertThrowsError(try ZoneRules.parse(file.bytes + [0x0A], name: "Test/V1"))
    }

    func testUTCAndExtremeInstants() throws {
        XCTAssertEqual(ZoneRules.utc.name, "UTC")
        XCTAssertEqual(ZoneRules.utc.localTime(at: 0),
                       LocalTime(year: 1970, month: 1, day: 1, weekday: 3, minuteOfDay: 0, second: 0, utcOffset: 0, abbreviation: "UTC"))
        XCTAssertEqual(ZoneRules.utc.localTime(at: 951_782_399),   // 2000-02-28 23:59:59, a Monday
                       LocalTime(year: 2000, month: 2, day: 28, weekday: 0, minuteOfDay: 1439, second: 59, utcOffset: 0, abbreviation: "UTC"))
        XCTAssertEqual(ZoneRules.utc.localTime(at: -1).year, 1969)
        let berlin = try ZoneRules.load(name: "Europe/Berlin")
        for t: Int64 in [.min, .min + 1, .max, .max - 1, -(1 << 62), 1 << 62] {
            let l = berlin.localTime(at: t)
            XCTAssertTrue([3600, 7200, 3208].contains(l.utcOffset), "\(t): \(l)")
        }
        // 400 Gregorian years later the footer gives the same answer at the same wall time.
        let cycle: Int64 = 146_097 * 86_400
        for t: Int64 in [2_000_000_000, 2_200_000_000, 2_224_000_000] {
            let a = berlin.localTime(at: t), b = berlin.localTime(at: t + 10 * cycle)
            XCTAssertEqual(a.year + 4000, b.year)
            XCTAssertEqual([a.month, a.day, a.weekday, a.minuteOfDay, a.utcOffset], [b.month, b.day, b.weekday, b.minuteOfDay, b.utcOffset])
        }
    }

    func testCivilCalendarRoundTrips() {
        XCTAssertEqual(CivilCalendar.days(year: 1970, month: 1, day: 1), 0)
        XCTAssertEqual(CivilCalendar.days(year: 2000, month: 3, day: 1), 11_017)
        XCTAssertTrue(CivilCalendar.civil(fromDays: -719_468) == (0, 3, 1))
        var expected = (year: 1600, month: 1, day: 1)
        var days = CivilCalendar.days(year: 1600, month: 1, day: 1)
        while expected.year < 2401 {
            let got = CivilCalendar.civil(fromDays: days)
            guard got == expected else {
                XCTFail("day \(days): \(got) instead of \(expected)")
                return
            }
            XCTAssertEqual(CivilCalendar.days(year: expected.year, month: expected.month, day: expected.day), days)
            days += 1
            expected.day += 1
            if expected.day > CivilCalendar.daysIn(year: expected.year, month: expected.month) {
                expected.day = 1
                expected.month += 1
                if expected.month > 12 { expected.month = 1; expected.year += 1 }
            }
        }
    }

    func testFooterStrings() throws {
        let sydney = try PosixTZRule(parsing: "AEST-10AEDT,M10.1.0,M4.1.0/3")
        XCTAssertEqual(sydney.standard, PosixTZRule.Period(utcOffset: 36000, isDST: false, abbreviation: "AEST"))
        XCTAssertEqual(sydney.daylight?.period, PosixTZRule.Period(utcOffset: 39600, isDST: true, abbreviation: "AEDT"))
        XCTAssertEqual(sydney.daylight?.end, PosixTZRule.Transition(day: .monthWeekDay(month: 4, week: 1, weekday: 0), time: 10800))
        XCTAssertEqual(sydney.period(at: 1_767_225_600).abbreviation, "AEDT")   // 2026-01-01: summer there
        XCTAssertEqual(sydney.period(at: 1_783_000_000).abbreviation, "AEST")   // July 2026
        let tehran = try PosixTZRule(parsing: "<+0330>-3:30")
        XCTAssertEqual(tehran.standard, PosixTZRule.Period(utcOffset: 12600, isDST: false, abbreviation: "+0330"))
        XCTAssertNil(tehran.daylight)
        let nuuk = try PosixTZRule(parsing: "<-02>2<-01>,M3.5.0/-1,M10.5.0/0")
        XCTAssertEqual(nuuk.daylight?.start.time, -3600)
    }

    func testFooterStringsRefused() {
        for bad in ["", "CE-1", "CET", "CET-1CEST", "CET-1CEST,M3.5.0", "CET-1CEST,M3.5.0,M10.5.0/3x", "CET-25", "CET-1:60",
                    "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0", "CET-1CEST,J0,J365", "CET-1CEST,366,0", "<AB>1",
                    "<A B>1", "<ABC", "CET-1CEST,M3.5.0/168,M10.5.0", "CET-1CEST,M3.5.0/-168,M10.5.0", "CET-123", "CET-1CEST,M3.5.0,M10.5.0,"] {
            XCTAssertThrowsError(try PosixTZRule(parsing: bad), bad)
        }
    }
}

/// A TZif file built in a test: version 1 data (32-bit) and, from version 2 on, the same data in 64 bits and
/// the footer.
struct TZifFile {
    var version: UInt8 = UInt8(ascii: "3")
    /// (time, type index)
    var transitions: [(Int64, UInt8)] = []
    /// (UT offset, DST flag, abbreviation index)
    var types: [(Int32, UInt8, UInt8)] = [(0, 0, 0)]
    var characters: [UInt8] = Array("XXX\0".utf8)
    /// (time, correction)
    var leapSeconds: [(Int64, Int32)] = []
    /// Nil: no footer (only for version 1).
    var footer: String?

    init(footer: String?) {
        self.footer = footer
    }

    var bytes: [UInt8] {
        var out = header() + block(timeSize: 4)
        if version != 0 {
            out += header() + block(timeSize: 8)
            out += [0x0A] + Array((footer ?? "").utf8) + [0x0A]
        }
        return out
    }

    private func header() -> [UInt8] {
        var out = Array("TZif".utf8) + [version] + [UInt8](repeating: 0, count: 15)
        for count in [types.count, types.count, leapSeconds.count, transitions.count, types.count, characters.count] {
            out += Self.be(UInt64(count), 4)
        }
        return out
    }

    private func block(timeSize: Int) -> [UInt8] {
        var out: [UInt8] = []
        for (time, _) in transitions { out += Self.be(UInt64(bitPattern: time), timeSize) }
        out += transitions.map(\.1)
        for (offset, dst, index) in types { out += Self.be(UInt64(UInt32(bitPattern: offset)), 4) + [dst, index] }
        out += characters
        for (time, correction) in leapSeconds { out += Self.be(UInt64(bitPattern: time), timeSize) + Self.be(UInt64(UInt32(bitPattern: correction)), 4) }
        out += [UInt8](repeating: 0, count: types.count)   // standard/wall
        out += [UInt8](repeating: 0, count: types.count)   // UT/local
        return out
    }

    private static func be(_ value: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }
}

/// The six counts of a TZif header at `offset`, to find the second header of a real file.
struct TZifCounts {
    let counts: [Int]

    init(_ bytes: [UInt8], at offset: Int) {
        counts = (0..<6).map { i in (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + 20 + i * 4 + $1]) } }
    }

    /// isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt.
    func blockSize(timeSize: Int) -> Int {
        counts[3] * (timeSize + 1) + counts[4] * 6 + counts[5] + counts[2] * (timeSize + 4) + counts[1] + counts[0]
    }
}

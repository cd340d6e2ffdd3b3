/// A POSIX TZ string as TZif footers carry it (RFC 8536 §3.3, with the version 3 extensions): the rule for
/// every instant after a zone's last transition. Examples: "CET-1CEST,M3.5.0,M10.5.0/3", "<+0330>-3:30",
/// "AEST-10AEDT,M10.1.0,M4.1.0/3" (daylight time spans the new year), "<-02>2<-01>,M3.5.0/-1,M10.5.0/0".
///
/// Offsets here are seconds east of UTC (the string itself counts west: "CET-1" is UTC+1). A string with a
/// daylight-time name must give its rule: zic always writes one, and POSIX leaves the default to each system.
struct PosixTZRule: Sendable, Equatable {
    /// One of the two kinds of local time the string names.
    struct Period: Sendable, Equatable {
        let utcOffset: Int
        let isDST: Bool
        let abbreviation: String
    }

    /// The day of a transition within a year.
    enum Day: Sendable, Equatable {
        /// "Jn": day n of 1...365, February 29 never counted (J60 is always March 1).
        case julianNoLeap(Int)
        /// "n": day n of 0...365, February 29 counted in leap years.
        case zeroBased(Int)
        /// "Mm.w.d": weekday d (0 = Sunday) of week w (1...5, 5 = the last) of month m.
        case monthWeekDay(month: Int, week: Int, weekday: Int)
    }

    /// A transition: its day, and the local time of day (in the time in force before it) when it happens.
    /// Version 3 lets the time be -167...167 hours.
    struct Transition: Sendable, Equatable {
        let day: Day
        let time: Int
    }

    struct Daylight: Sendable, Equatable {
        let period: Period
        let start: Transition
        let end: Transition
    }

    /// Why a TZ string was refused (the caller names the zone).
    struct ParseError: Error, Sendable {
        let message: String
    }

    let standard: Period
    /// Nil: standard time all year.
    let daylight: Daylight?

    /// Parses `text` (without the footer's newlines).
    init(parsing text: String) throws(ParseError) {
        var scanner = TZStringScanner(bytes: Array(text.utf8))
        let stdName = try scanner.name(what: "standard time")
        let stdOffset = try scanner.offset(what: "standard time")
        standard = Period(utcOffset: stdOffset, isDST: false, abbreviation: stdName)
        if scanner.atEnd {
            daylight = nil
            return
        }
        let dstName = try scanner.name(what: "daylight time")
        var dstOffset = stdOffset + 3600
        if !scanner.atEnd && scanner.peek != UInt8(ascii: ",") {
            dstOffset = try scanner.offset(what: "daylight time")
        }
        guard !scanner.atEnd else {
            throw ParseError(message: "daylight time \(dstName) has no rule (expected \",start[/time],end[/time]\" after it)")
        }
        try scanner.expect(",", what: "before the daylight-time start")
        let start = try scanner.transition(what: "daylight-time start")
        try scanner.expect(",", what: "before the daylight-time end")
        let end = try scanner.transition(what: "daylight-time end")
        guard scanner.atEnd else {
            throw ParseError(message: "unexpected \(scanner.restDescription) after the daylight-time end")
        }
        daylight = Daylight(period: Period(utcOffset: dstOffset, isDST: true, abbreviation: dstName), start: start, end: end)
    }

    /// The local time in force at `unixSeconds` (POSIX seconds). As glibc and Python's zoneinfo do, the
    /// instant is judged against the start and end of its own UTC year: in daylight time from the start up
    /// to the end, or, when the end comes first (the southern hemisphere), outside the end-to-start span.
    /// The rule repeats every 400 Gregorian years (146097 days, a whole number of weeks), so the instant is
    /// first brought into one such cycle: any Int64 works, with no overflow.
    func period(at unixSeconds: Int64) -> Period {
        guard let daylight else { return standard }
        let cycle = Int64(CivilCalendar.daysPer400Years) * 86400
        var t = unixSeconds % cycle
        if t < 0 { t += cycle }
        let year = CivilCalendar.civil(fromDays: Int(CivilCalendar.floorDiv(t, 86400))).year
        let start = instant(daylight.start, year: year, offsetBefore: standard.utcOffset)
        let end = instant(daylight.end, year: year, offsetBefore: daylight.period.utcOffset)
        let inDaylight = start < end ? (start <= t && t < end) : !(end <= t && t < start)
        return inDaylight ? daylight.period : standard
    }

    /// The POSIX instant of `transition` in `year`, when the offset in force before it is `offsetBefore`.
    func instant(_ transition: Transition, year: Int, offsetBefore: Int) -> Int64 {
        let days: Int
        switch transition.day {
        case .julianNoLeap(let n):
            days = CivilCalendar.days(year: year, month: 1, day: 1) + n - 1 + (CivilCalendar.isLeap(year) && n >= 60 ? 1 : 0)
        case .zeroBased(let n):
            days = CivilCalendar.days(year: year, month: 1, day: 1) + n
        case .monthWeekDay(let month, let week, let weekday):
            let first = CivilCalendar.days(year: year, month: month, day: 1)
            // 1970-01-01 was a Thursday (4 with Sunday = 0).
            let firstWeekday = CivilCalendar.floorMod(first + 4, 7)
            var day = first + (weekday - firstWeekday + 7) % 7 + (week - 1) * 7
            if day >= first + CivilCalendar.daysIn(year: year, month: month) { day -= 7 }
            days = day
        }
        return Int64(days) * 86400 + Int64(transition.time) - Int64(offsetBefore)
    }
}

/// Reads a TZ string byte by byte.
private struct TZStringScanner {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
    /// What is left, quoted and shortened for an error message.
    var restDescription: String { ZoneText.quoted(bytes[min(index, bytes.count)...]) }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    private static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }

    /// "CET", or a quoted "<+0330>" (letters, digits, '+' and '-'); at least 3 characters, as POSIX asks.
    mutating func name(what: String) throws(PosixTZRule.ParseError) -> String {
        let start: Int
        let end: Int
        if peek == UInt8(ascii: "<") {
            index += 1
            start = index
            while let c = peek, c != UInt8(ascii: ">") {
                guard Self.isAlpha(c) || Self.isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") else {
                    throw PosixTZRule.ParseError(message: "the quoted \(what) name holds \(Self.show(c)); only letters, digits, '+' and '-' may be quoted")
                }
                index += 1
            }
            guard peek == UInt8(ascii: ">") else {
                throw PosixTZRule.ParseError(message: "the quoted \(what) name has no closing '>'")
            }
            end = index
            index += 1
        } else {
            start = index
            while let c = peek, Self.isAlpha(c) { index += 1 }
            end = index
        }
        guard end - start >= 3 else {
            let found = start == end ? (atEnd ? "nothing" : restDescription) : ZoneText.quoted(bytes[start..<end])
            throw PosixTZRule.ParseError(message: "expected a \(what) name of at least 3 letters (or <...> quoted), found \(found)")
        }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// "[+-]hh[:mm[:ss]]", hours 0...24, counted west of UTC; returned east of UTC.
    mutating func offset(what: String) throws(PosixTZRule.ParseError) -> Int {
        let west = try signedClock(maxHours: 24, what: "\(what) offset")
        return -west
    }

    /// ",date[/time]".
    mutating func transition(what: String) throws(PosixTZRule.ParseError) -> PosixTZRule.Transition {
        let day: PosixTZRule.Day
        if peek == UInt8(ascii: "J") {
            index += 1
            let n = try number(maxDigits: 3, what: "\(what) Julian day")
            guard n >= 1 && n <= 365 else { throw PosixTZRule.ParseError(message: "\(what): Julian day J\(n) is not in 1...365") }
            day = .julianNoLeap(n)
        } else if peek == UInt8(ascii: "M") {
            index += 1
            let month = try number(maxDigits: 2, what: "\(what) month")
            try expect(".", what: "after the \(what) month")
            let week = try number(maxDigits: 1, what: "\(what) week")
            try expect(".", what: "after the \(what) week")
            let weekday = try number(maxDigits: 1, what: "\(what) weekday")
            guard month >= 1 && month <= 12, week >= 1 && week <= 5, weekday <= 6 else {
                throw PosixTZRule.ParseError(message: "\(what) M\(month).\(week).\(weekday): month is 1...12, week 1...5, weekday 0...6")
            }
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
        } else if let c = peek, Self.isDigit(c) {
            let n = try number(maxDigits: 3, what: "\(what) day")
            guard n <= 365 else { throw PosixTZRule.ParseError(message: "\(what): day \(n) is not in 0...365") }
            day = .zeroBased(n)
        } else {
            throw PosixTZRule.ParseError(message: "expected the \(what) date (Jn, n or Mm.w.d), found \(atEnd ? "nothing" : restDescription)")
        }
        var time = 2 * 3600
        if peek == UInt8(ascii: "/") {
            index += 1
            time = try signedClock(maxHours: 167, what: "\(what) time")
        }
        return PosixTZRule.Transition(day: day, time: time)
    }

    mutating func expect(_ character: Character, what: String) throws(PosixTZRule.ParseError) {
        guard let ascii = character.asciiValue, peek == ascii else {
            throw PosixTZRule.ParseError(message: "expected '\(character)' \(what), found \(atEnd ? "the end" : restDescription)")
        }
        index += 1
    }

    /// "[+-]h[h[h]][:mm[:ss]]" in seconds.
    private mutating func signedClock(maxHours: Int, what: String) throws(PosixTZRule.ParseError) -> Int {
        var sign = 1
        if peek == UInt8(ascii: "+") {
            index += 1
        } else if peek == UInt8(ascii: "-") {
            sign = -1
            index += 1
        }
        let hours = try number(maxDigits: maxHours > 99 ? 3 : 2, what: "\(what) hours")
        guard hours <= maxHours else {
            throw PosixTZRule.ParseError(message: "\(what): \(hours) hours is more than \(maxHours)")
        }
        var minutes = 0, seconds = 0
        if peek == UInt8(ascii: ":") {
            index += 1
            minutes = try number(maxDigits: 2, what: "\(what) minutes")
            if peek == UInt8(ascii: ":") {
                index += 1
                seconds = try number(maxDigits: 2, what: "\(what) seconds")
            }
        }
        guard minutes <= 59 && seconds <= 59 else {
            throw PosixTZRule.ParseError(message: "\(what): minutes and seconds are 0...59")
        }
        return sign * (hours * 3600 + minutes * 60 + seconds)
    }

    /// 1 to `maxDigits` decimal digits.
    private mutating func number(maxDigits: Int, what: String) throws(PosixTZRule.ParseError) -> Int {
        var value = 0
        var digits = 0
        while let c = peek, Self.isDigit(c) {
            guard digits < maxDigits else {
                throw PosixTZRule.ParseError(message: "\(what): more than \(maxDigits) digits")
            }
            value = value * 10 + Int(c - 0x30)
            digits += 1
            index += 1
        }
        guard digits > 0 else {
            throw PosixTZRule.ParseError(message: "expected the \(what) (digits), found \(atEnd ? "the end" : restDescription)")
        }
        return value
    }

    private static func show(_ c: UInt8) -> String {
        c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte 0x\(String(c, radix: 16))"
    }
}

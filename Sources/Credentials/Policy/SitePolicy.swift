import Core

/// The claims of a site policy document (policy-file), read only after its signature verified:
///
///     {"ver": 7, "iat": 1764590000, "exp": 1767182000, "tz": "Europe/Berlin",
///      "door": {"id": "north-1", "role": "in"},
///      "groups": {"cleaning": {"schedule": [{"days": ["mon","tue","wed","thu","fri"], "from": "18:00", "to": "22:00"}]}},
///      "holidays": ["2026-12-25"],
///      "antipassback": {"mode": "off", "timeout_s": 3600},
///      "deny": ["4711", 90210]}
///
/// Strict: a wrong type, an unknown day, a time that is not HH:MM, a date that is not YYYY-MM-DD, a
/// group name or a number out of bounds is an error naming the member; nothing is guessed. Names and
/// numbers are compared byte for byte.
public struct SitePolicy: Sendable {
    public let version: Int64
    public let issuedAt: Int64
    public let expiresAt: Int64
    /// The IANA zone name (`tz`) schedules and holidays are read in.
    public let timeZone: String
    public let door: Door
    /// Group name (its UTF-8 bytes) to its weekly windows.
    public let groups: [[UInt8]: [Window]]
    public let groupNames: [String]
    /// Holidays as days since 1970-01-01 in the site's calendar.
    public let holidays: Set<Int>
    public let antipassback: Antipassback
    /// Credential numbers (their UTF-8 bytes) refused as `revoked`.
    public let deny: Set<[UInt8]>

    public struct Door: Equatable, Sendable {
        public let id: String?
        public let role: Role
    }

    /// Which way a read at this door moves a person (anti-passback).
    public enum Role: String, Sendable, CaseIterable {
        case `in`, out, both
    }

    public struct Antipassback: Equatable, Sendable {
        public let mode: Mode
        /// After this many seconds a pass may enter again without having exited.
        public let timeoutSeconds: Int64
        public enum Mode: String, Sendable, CaseIterable { case off, soft, hard }
    }

    /// A weekly window: on each of `days` (0 = Monday), from `from` to `to` minutes after local midnight.
    /// `to` at or before `from` runs past midnight into the next day; `to` may be 1440 (24:00).
    public struct Window: Equatable, Sendable {
        public let days: Set<Int>
        public let from: Int
        public let to: Int

        /// Whether local `weekday` and `minute` fall inside.
        public func contains(weekday: Int, minute: Int) -> Bool {
            if from < to { return days.contains(weekday) && minute >= from && minute < to }
            // Overnight: the evening of a listed day, or the morning after one.
            if days.contains(weekday) && minute >= from { return true }
            return days.contains((weekday + 6) % 7) && minute < to
        }
    }

    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Bounds: a document of 1 MiB holds them with room to spare.
    public static let maxGroups = 1000
    public static let maxWindows = 10_000
    public static let maxHolidays = 3660
    public static let maxDeny = 100_000
    public static let maxNameBytes = 64
    public static let maxNumberBytes = 128

    /// The claims, strictly. The fuzz target's entry point (no signature needed to reach it there).
    public static func parse(_ payload: [UInt8]) throws(SitePolicyError) -> SitePolicy {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(payload, maxBytes: SitePolicyToken.maxTokenBytes, maxDepth: 8)
        } catch {
            throw SitePolicyError("the claims: \(error)")
        }
        guard let object = value.objectValue else { throw SitePolicyError("the claims are not a JSON object") }
        guard let version = object["ver"]?.numberValue?.int64, version >= 0 else {
            throw SitePolicyError("ver must be a whole number of 0 or more (a version that only goes up)")
        }
        let issuedAt = try seconds(object, "iat")
        let expiresAt = try seconds(object, "exp")
        guard expiresAt > issuedAt else { throw SitePolicyError("exp \(expiresAt) is not after iat \(issuedAt)") }
        guard let tz = object["tz"]?.stringValue, !tz.isEmpty else {
            throw SitePolicyError("tz must be the site's IANA time zone name, such as \"Europe/Berlin\" or \"UTC\"")
        }
        let door = try parseDoor(object["door"])
        var groups: [[UInt8]: [Window]] = [:]
        var names: [String] = []
        var windowCount = 0
        if let value = object["groups"] {
            guard let map = value.objectValue else { throw SitePolicyError("groups must be an object of group name to {\"schedule\": [...]}") }
            guard map.members.count <= maxGroups else { throw SitePolicyError("groups holds \(map.members.count) groups; at most \(maxGroups)") }
            for (name, group) in map.members {
                guard !name.isEmpty, name.utf8.count <= maxNameBytes else {
                    throw SitePolicyError("group names must be 1 to \(maxNameBytes) bytes")
                }
                let shown = JSONText.asciiString(name)
                guard let schedule = group.objectValue?["schedule"]?.arrayValue else {
                    throw SitePolicyError("groups[\(shown)] must be an object with a \"schedule\" array (empty: never)")
                }
                windowCount += schedule.count
                guard windowCount <= maxWindows else { throw SitePolicyError("the schedules hold more than \(maxWindows) windows") }
                var windows: [Window] = []
                for (i, item) in schedule.enumerated() {
                    windows.append(try parseWindow(item, at: "groups[\(shown)].schedule[\(i)]"))
                }
                groups[Array(name.utf8)] = windows
                names.append(name)
            }
        }
        var holidays = Set<Int>()
        if let value = object["holidays"] {
            guard let list = value.arrayValue, list.count <= maxHolidays else {
                throw SitePolicyError("holidays must be an array of at most \(maxHolidays) \"YYYY-MM-DD\" dates")
            }
            for (i, item) in list.enumerated() {
                guard let text = item.stringValue, let day = CivilDate.parse(text) else {
                    throw SitePolicyError("holidays[\(i)] must be a date \"YYYY-MM-DD\"")
                }
                holidays.insert(day)
            }
        }
        let antipassback = try parseAntipassback(object["antipassback"])
        var deny = Set<[UInt8]>()
        if let value = object["deny"] {
            guard let list = value.arrayValue, list.count <= maxDeny else {
                throw SitePolicyError("deny must be an array of at most \(maxDeny) credential numbers")
            }
            for (i, item) in list.enumerated() {
                let number: String
                if let text = item.stringValue {
                    number = text
                } else if let whole = item.numberValue?.int64 {
                    number = String(whole)
                } else {
                    throw SitePolicyError("deny[\(i)] must be a credential number: a string or a whole number")
                }
                guard !number.isEmpty, number.utf8.count <= maxNumberBytes else {
                    throw SitePolicyError("deny[\(i)] must be 1 to \(maxNumberBytes) bytes")
                }
                deny.insert(Array(number.utf8))
            }
        }
        return SitePolicy(version: version, issuedAt: issuedAt, expiresAt: expiresAt, timeZone: tz, door: door,
                          groups: groups, groupNames: names, holidays: holidays, antipassback: antipassback, deny: deny)
    }

    static func parseDoor(_ value: JSONValue?) throws(SitePolicyError) -> Door {
        guard let value else { return Door(id: nil, role: .both) }
        guard let object = value.objectValue else { throw SitePolicyError("door must be an object {\"id\": ..., \"role\": \"in\"|\"out\"|\"both\"}") }
        var id: String?
        if let v = object["id"] {
            guard let text = v.stringValue, !text.isEmpty, text.utf8.count <= maxNameBytes else {
                throw SitePolicyError("door.id must be a string of 1 to \(maxNameBytes) bytes")
            }
            id = text
        }
        var role = Role.both
        if let v = object["role"] {
            guard let text = v.stringValue, let r = Role(rawValue: text) else {
                throw SitePolicyError("door.role must be one of in, out, both")
            }
            role = r
        }
        return Door(id: id, role: role)
    }

    static func parseAntipassback(_ value: JSONValue?) throws(SitePolicyError) -> Antipassback {
        guard let value else { return Antipassback(mode: .off, timeoutSeconds: 0) }
        guard let object = value.objectValue else { throw SitePolicyError("antipassback must be an object {\"mode\": \"off\"|\"soft\"|\"hard\", \"timeout_s\": N}") }
        guard let text = object["mode"]?.stringValue, let mode = Antipassback.Mode(rawValue: text) else {
            throw SitePolicyError("antipassback.mode must be one of off, soft, hard")
        }
        var timeout: Int64 = 0
        if let v = object["timeout_s"] {
            guard let n = v.numberValue?.int64, n >= 0, n <= 31_622_400 else {
                throw SitePolicyError("antipassback.timeout_s must be a whole number of seconds from 0 (never) to 31622400 (366 days)")
            }
            timeout = n
        }
        return Antipassback(mode: mode, timeoutSeconds: timeout)
    }

    static func parseWindow(_ value: JSONValue, at place: String) throws(SitePolicyError) -> Window {
        guard let object = value.objectValue else { throw SitePolicyError("\(place) must be {\"days\": [...], \"from\": \"HH:MM\", \"to\": \"HH:MM\"}") }
        guard let list = object["days"]?.arrayValue, !list.isEmpty, list.count <= 7 else {
            throw SitePolicyError("\(place).days must be an array of 1 to 7 of mon, tue, wed, thu, fri, sat, sun")
        }
        var days = Set<Int>()
        for item in list {
            guard let text = item.stringValue, let day = dayNames.firstIndex(where: { $0.bytesEqual(text) }) else {
                throw SitePolicyError("\(place).days: each day must be one of mon, tue, wed, thu, fri, sat, sun")
            }
            days.insert(day)
        }
        guard let from = object["from"]?.stringValue.flatMap({ minutes($0, allowsEndOfDay: false) }) else {
            throw SitePolicyError("\(place).from must be a local time \"HH:MM\" from 00:00 to 23:59")
        }
        guard let to = object["to"]?.stringValue.flatMap({ minutes($0, allowsEndOfDay: true) }) else {
            throw SitePolicyError("\(place).to must be a local time \"HH:MM\" from 00:00 to 24:00")
        }
        return Window(days: days, from: from, to: to)
    }

    /// "HH:MM" as minutes after midnight; "24:00" only where allowed.
    static func minutes(_ text: String, allowsEndOfDay: Bool) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 5, b[2] == UInt8(ascii: ":"),
              let h = CivilDate.digits(b[0..<2]), let m = CivilDate.digits(b[3..<5]), m < 60 else { return nil }
        if h == 24 && m == 0 && allowsEndOfDay { return 1440 }
        guard h < 24 else { return nil }
        return h * 60 + m
    }

    private static func seconds(_ object: JSONObject, _ name: String) throws(SitePolicyError) -> Int64 {
        guard let number = object[name]?.numberValue, let d = number.double, d.isFinite, abs(d) < 1e11 else {
            throw SitePolicyError("\(name) must be a number of seconds since 1970 (NumericDate)")
        }
        return number.int64 ?? Int64(d.rounded(.down))
    }

    /// One line for logs and `policy show`: the version, the door and what it holds (never a number).
    public var summary: String {
        "ver \(version), door \(door.id.map { JSONText.asciiString($0) } ?? "(no id)") role \(door.role.rawValue), tz \(JSONText.asciiString(timeZone)), "
            + "\(groups.count) groups with \(groups.values.reduce(0) { $0 + $1.count }) windows, \(holidays.count) holidays, "
            + "\(deny.count) denied numbers, anti-passback \(antipassback.mode.rawValue)"
    }
}

/// Why a site policy document cannot be used; the message names what is wrong, never the token.
public struct SitePolicyError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Proleptic Gregorian dates as days since 1970-01-01.
public enum CivilDate {
    /// Days since 1970-01-01 of year-month-day (the days-from-civil method).
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// "YYYY-MM-DD" (a real date) as days since 1970-01-01.
    static func parse(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              let y = digits(b[0..<4]), let m = digits(b[5..<7]), let d = digits(b[8..<10]),
              (1...12).contains(m), d >= 1 else { return nil }
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard d <= lengths[m - 1] else { return nil }
        return days(year: y, month: m, day: d)
    }

    static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        var n = 0
        for b in bytes {
            guard b >= 0x30, b <= 0x39 else { return nil }
            n = n * 10 + Int(b - 0x30)
        }
        return n
    }
}

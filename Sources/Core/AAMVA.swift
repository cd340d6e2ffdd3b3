/// The fields of a North American driver licence or ID card that a kiosk may show, read from the PDF417
/// on its back (AAMVA DL/ID Card Design Standard, annex D; its 2000 predecessor for version 01).
///
/// The layout: a header of `@`, the data element separator (LF), the record separator (RS), the segment
/// terminator (CR), the file type `ANSI ` (some cards of version 01 and before: `AAMVA`), the issuer
/// identification number (6 digits), the AAMVA version (2 digits), from version 02 the jurisdiction
/// version (2 digits), and the number of entries (2 digits). Then one 10-byte designator per subfile:
/// its type (`DL`, `ID`, or a jurisdiction's `Z?`), its offset from the start and its length (4 digits
/// each). A subfile starts with its type, then elements of a 3-letter ID and a value, each ended by the
/// data element separator, the last by the segment terminator.
///
/// Only what identifies the document is taken: the customer ID (DAQ, the licence number), the expiry
/// (DBA), the jurisdiction (DAJ) and the country (DCG); never the name, birth date or address. The
/// payload is untrusted: every offset and length is checked, and anything that does not follow the
/// layout gives nil, not a guess.
public struct AAMVALicence: Equatable, Sendable {
    /// The issuer identification number: 636000-636999 and 604xxx are AAMVA members' (636014 is California).
    public let issuer: String
    /// The AAMVA version of the layout (01-10 so far).
    public let version: Int
    /// The subfile the fields came from: `DL` (driver licence) or `ID` (identification card).
    public let documentType: String
    /// DAQ, the customer ID number printed as the licence number.
    public let documentNumber: String?
    /// DBA as an ISO date, YYYY-MM-DD; nil when the card has none or it is not a date.
    public let expiry: String?
    /// DAJ, the jurisdiction code (`CA`, `ON`).
    public let jurisdiction: String?
    /// DCG, the country (`USA`, `CAN`).
    public let country: String?

    public init(issuer: String, version: Int, documentType: String, documentNumber: String?, expiry: String?,
                jurisdiction: String?, country: String?) {
        self.issuer = issuer
        self.version = version
        self.documentType = documentType
        self.documentNumber = documentNumber
        self.expiry = expiry
        self.jurisdiction = jurisdiction
        self.country = country
    }

    /// Longest value kept from one element (DAQ is at most 25 characters in the standard).
    static let maxValueBytes = 40

    /// The licence in `payload`, or nil when the payload is not an AAMVA card.
    public static func parse(_ payload: [UInt8]) -> AAMVALicence? {
        let lf: UInt8 = 0x0A, rs: UInt8 = 0x1E, cr: UInt8 = 0x0D
        guard payload.count >= 21, payload[0] == UInt8(ascii: "@"), payload[1] == lf, payload[2] == rs,
              payload[3] == cr else { return nil }
        var at = 4
        if starts(payload, at, "ANSI ") {
            at += 5
        } else if starts(payload, at, "AAMVA") {
            at += 5
        } else {
            return nil
        }
        guard let issuer = digits(payload, at, 6), let version = number(payload, at + 6, 2) else { return nil }
        at += 8
        if version >= 2 {
            guard number(payload, at, 2) != nil else { return nil }   // the jurisdiction version
            at += 2
        }
        guard let entries = number(payload, at, 2), entries >= 1 else { return nil }
        at += 2
        for entry in 0..<entries {
            let designator = at + entry * 10
            guard designator + 10 <= payload.count else { return nil }
            let type = ascii(payload[designator..<designator + 2])
            guard type == "DL" || type == "ID" else { continue }
            guard let offset = number(payload, designator + 2, 4), let length = number(payload, designator + 6, 4),
                  let subfile = subfile(payload, type: type, offset: offset, length: length) else { return nil }
            let fields = elements(subfile)
            let country = fields["DCG"]
            return AAMVALicence(issuer: issuer, version: version, documentType: type,
                                documentNumber: fields["DAQ"], expiry: fields["DBA"].flatMap { isoDate($0, version: version, country: country) },
                                jurisdiction: fields["DAJ"], country: country)
        }
        return nil
    }

    /// The subfile's elements after its 2-byte type. Cards in the field are loose about the offset
    /// (some count from 1, some point past the type) and about the length (with or without the
    /// terminator), so the subfile is found as its type at the offset, or failing that within 2 bytes
    /// of it, and runs to its segment terminator, at most `length` + 2 bytes on, or the end of the payload.
    static func subfile(_ payload: [UInt8], type: String, offset: Int, length: Int) -> ArraySlice<UInt8>? {
        var start: Int?
        for candidate in [offset, offset - 1, offset + 1, offset - 2, offset + 2]
        where candidate >= 0 && candidate + 2 <= payload.count {
            if ascii(payload[candidate..<candidate + 2]) == type { start = candidate + 2; break }
        }
        guard let start else { return nil }
        let limit = min(payload.count, start + length + 2)
        let end = payload[start..<limit].firstIndex(of: 0x0D) ?? limit
        return payload[start..<end]
    }

    /// The elements of a subfile: a 3-character ID ([A-Z]{3}) and its value up to the data element
    /// separator. The first ID of each kind wins; values that are not printable ASCII or are too long
    /// are left out.
    static func elements(_ subfile: ArraySlice<UInt8>) -> [String: String] {
        var fields: [String: String] = [:]
        for element in subfile.split(separator: 0x0A, omittingEmptySubsequences: true) {
            guard element.count > 3 else { continue }
            let id = element.prefix(3)
            guard id.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { continue }
            let raw = element.dropFirst(3)
            guard raw.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { continue }
            var value = Array(raw)
            while value.last == UInt8(ascii: " ") { value.removeLast() }
            guard !value.isEmpty, value.count <= maxValueBytes else { continue }
            let key = ascii(id)
            if fields[key] == nil { fields[key] = ascii(value[...]) }
        }
        return fields
    }

    /// DBA as YYYY-MM-DD. Version 01 writes dates CCYYMMDD; later versions MMDDCCYY in the USA and
    /// CCYYMMDD in Canada. The two orders never both fit (a month is never 19-21), so the country's order
    /// is tried first and then the other; a value that is no real date in either gives nil.
    static func isoDate(_ value: String, version: Int, country: String?) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.count == 8, bytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        func n(_ from: Int, _ count: Int) -> Int { bytes[from..<from + count].reduce(0) { $0 * 10 + Int($1 - 48) } }
        let yearFirst = (year: n(0, 4), month: n(4, 2), day: n(6, 2))
        let monthFirst = (year: n(4, 4), month: n(0, 2), day: n(2, 2))
        let preferYearFirst = version < 2 || country == "CAN"
        for d in preferYearFirst ? [yearFirst, monthFirst] : [monthFirst, yearFirst]
        where (1900...2199).contains(d.year) && (1...12).contains(d.month) && (1...daysIn(d.month, d.year)).contains(d.day) {
            return pad(d.year, 4) + "-" + pad(d.month, 2) + "-" + pad(d.day, 2)
        }
        return nil
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    static func starts(_ payload: [UInt8], _ at: Int, _ text: String) -> Bool {
        let t = Array(text.utf8)
        return at + t.count <= payload.count && Array(payload[at..<at + t.count]) == t
    }

    static func digits(_ payload: [UInt8], _ at: Int, _ count: Int) -> String? {
        guard at >= 0, at + count <= payload.count else { return nil }
        let slice = payload[at..<at + count]
        guard slice.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return ascii(slice)
    }

    static func number(_ payload: [UInt8], _ at: Int, _ count: Int) -> Int? {
        digits(payload, at, count).flatMap { Int($0) }
    }

    static func ascii(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

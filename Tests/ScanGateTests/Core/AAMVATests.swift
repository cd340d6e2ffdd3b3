import Core
import Foundation
import Platform
import XCTest

/// Driver licences in PDF417 (AAMVA DL/ID Card Design Standard, annex D): samples built to the published
/// layout, the fields a kiosk shows, and payloads that break the layout.
final class AAMVATests: XCTestCase {
    /// A card as annex D lays it out: the header, one designator per subfile with its offset from the
    /// start and its length (type to terminator), then the subfiles. `version` 01 has no jurisdiction
    /// version; `fileType` is `ANSI ` (some early cards: `AAMVA`).
    static func card(version: Int = 9, issuer: String = "636000", fileType: String = "ANSI ",
                     subfiles: [(String, [String])]) -> [UInt8] {
        var header = Array("@\n\u{1E}\r".utf8) + Array(fileType.utf8) + Array(issuer.utf8) + Array(String(format: "%02d", version).utf8)
        if version >= 2 { header += Array("00".utf8) }
        header += Array(String(format: "%02d", subfiles.count).utf8)
        let bodies = subfiles.map { type, elements in Array((type + elements.joined(separator: "\n") + "\r").utf8) }
        var offset = header.count + 10 * subfiles.count
        var designators: [UInt8] = []
        for (i, body) in bodies.enumerated() {
            designators += Array((subfiles[i].0 + String(format: "%04d%04d", offset, body.count)).utf8)
            offset += body.count
        }
        return header + designators + bodies.flatMap { $0 }
    }

    /// The elements of annex D's example card (a Virginia licence), version 09.
    static let virginia = ["DAQT64235789", "DCSSAMPLE", "DDEN", "DACMICHAEL", "DDFN", "DADJOHN", "DDGN", "DCUJR",
                           "DCAD", "DCBK", "DCDPH", "DBD06062019", "DBB06061986", "DBA12102024", "DBC1", "DAU068 in",
                           "DAYBRO", "DAG2300 WEST BROAD STREET", "DAIRICHMOND", "DAJVA", "DAK232690000  ",
                           "DCF2424244747474786102204", "DCGUSA", "DCK123456789", "DDAF", "DDB06062018", "DDC06062020", "DDD1"]

    func testTheStandardsExampleGivesNumberExpiryJurisdictionAndCountry() throws {
        let payload = Self.card(subfiles: [("DL", Self.virginia), ("ZV", ["ZVAJURISDICTIONDEFINEDELEMENT"])])
        // The layout as the standard prints it: the DL subfile at 0041, 278 bytes, the ZV one after it.
        XCTAssertEqual(String(decoding: payload[4..<41], as: UTF8.self), "ANSI 636000090002DL00410278ZV03190032")
        let l = try XCTUnwrap(AAMVALicence.parse(payload))
        XCTAssertEqual(l, AAMVALicence(issuer: "636000", version: 9, documentType: "DL", documentNumber: "T64235789",
                                       expiry: "2024-12-10", jurisdiction: "VA", country: "USA"))
    }

    func testCanadaWritesDatesYearFirstAndVersionOneAlways() throws {
        let ontario = Self.card(version: 10, issuer: "636012",
                                subfiles: [("DL", ["DAQD1234-56789-01234", "DBA20301231", "DAJON", "DCGCAN"])])
        XCTAssertEqual(AAMVALicence.parse(ontario)?.expiry, "2030-12-31")
        XCTAssertEqual(AAMVALicence.parse(ontario)?.documentNumber, "D1234-56789-01234")
        // Version 01 (DL/ID-2000): CCYYMMDD whatever the country, no jurisdiction version in the header.
        let old = Self.card(version: 1, issuer: "636014", fileType: "AAMVA", subfiles: [("ID", ["DAQ12345", "DBA20280229", "DAJCA"])])
        XCTAssertEqual(AAMVALicence.parse(old), AAMVALicence(issuer: "636014", version: 1, documentType: "ID",
                                                             documentNumber: "12345", expiry: "2028-02-29",
                                                             jurisdiction: "CA", country: nil))
        // A US card whose expiry came year first anyway: the other order fits, and only it.
        let loose = Self.card(subfiles: [("DL", ["DAQX1", "DBA20291105", "DCGUSA"])])
        XCTAssertEqual(AAMVALicence.parse(loose)?.expiry, "2029-11-05")
    }

    func testAJurisdictionSubfileFirstAndALooseOffsetStillFindTheLicence() throws {
        let payload = Self.card(subfiles: [("ZC", ["ZCAX"]), ("DL", ["DAQA7", "DBA01312031"])])
        XCTAssertEqual(AAMVALicence.parse(payload)?.documentNumber, "A7")
        XCTAssertEqual(AAMVALicence.parse(payload)?.expiry, "2031-01-31")
        // Offsets counted from 1 (one past the type) are common in the field.
        var shifted = Self.card(subfiles: [("DL", ["DAQB8"])])
        let designator = Array("DL0031".utf8)
        XCTAssertEqual(Array(shifted[21..<27]), designator)
        shifted.replaceSubrange(21..<27, with: Array("DL0032".utf8))
        XCTAssertEqual(AAMVALicence.parse(shifted)?.documentNumber, "B8")
    }

    func testPayloadsOffTheLayoutGiveNoFieldsAndBadValuesAreLeftOut() {
        let good = Self.card(subfiles: [("DL", ["DAQC9", "DBA13402030", "DAJ\u{07}X"])])
        let l = AAMVALicence.parse(good)
        XCTAssertEqual(l?.documentNumber, "C9")
        XCTAssertNil(l?.expiry, "month 13 and year 1340 are no date in either order")
        XCTAssertNil(l?.jurisdiction, "a control byte in a value")
        let tooLong = Self.card(subfiles: [("DL", ["DAQ" + String(repeating: "9", count: 41)])])
        XCTAssertNil(AAMVALicence.parse(tooLong)?.documentNumber)
        var cases: [(String, [UInt8])] = [
            ("not AAMVA", Array("@\n\u{1E}\rHELLO 636000090001DL00310010DLDAQ1\r".utf8)),
            ("no compliance indicator", Array(good.dropFirst())),
            ("cut in the header", Array(good.prefix(18))),
            ("cut in the designator", Array(good.prefix(25))),
            ("cut before the subfile", Array(good.prefix(31))),
            ("a QR payload", Array("https://example.com/DAQ123".utf8)),
        ]
        var pastEnd = good
        pastEnd.replaceSubrange(21..<31, with: Array("DL99990010".utf8))
        cases.append(("offset past the end", pastEnd))
        var letters = good
        letters.replaceSubrange(15..<17, with: Array("0A".utf8))
        cases.append(("a letter in the version", letters))
        var noEntries = good
        noEntries.replaceSubrange(19..<21, with: Array("00".utf8))
        cases.append(("no entries", noEntries))
        for (what, payload) in cases {
            XCTAssertNil(AAMVALicence.parse(payload), what)
        }
    }

    func testTheJSONLineOfAPDF417CarriesTheFieldsAndOtherSymbologiesDoNot() throws {
        let payload = Self.card(subfiles: [("DL", Self.virginia)])
        func line(_ symbology: Symbology) throws -> [String: Any] {
            let event = ReadEvent(seq: 1, wallTimeNanoseconds: 1_790_000_000_000_000_000,
                                  symbol: DecodedSymbol(symbology: symbology, data: payload, bounds: Rect(x: 0, y: 0, w: 9, h: 9)),
                                  frame: 3, dequeuedAt: MonotonicInstant(nanoseconds: 0), emittedAt: MonotonicInstant(nanoseconds: 1),
                                  verdict: .accepted)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(EventLine.json(event).utf8)) as? [String: Any])
        }
        let fields = try XCTUnwrap(try line(.pdf417)["aamva"] as? [String: Any])
        XCTAssertEqual(fields["issuer"] as? String, "636000")
        XCTAssertEqual(fields["version"] as? Int, 9)
        XCTAssertEqual(fields["type"] as? String, "DL")
        XCTAssertEqual(fields["number"] as? String, "T64235789")
        XCTAssertEqual(fields["expiry"] as? String, "2024-12-10")
        XCTAssertEqual(fields["jurisdiction"] as? String, "VA")
        XCTAssertEqual(fields["country"] as? String, "USA")
        XCTAssertEqual(fields.count, 7, "nothing else: no name, birth date or address")
        XCTAssertNil(try line(.qr)["aamva"])
    }
}

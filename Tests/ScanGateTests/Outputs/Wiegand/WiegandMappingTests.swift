import Core
import XCTest
import Wiegand
import Settings

/// From a read to the number Wiegand sends: each mapping, the facility code, the range rule, and
/// hostile payloads (each a clear refusal, nothing half-built).
final class WiegandMappingTests: XCTestCase {
    func encoder(_ format: WiegandFormat = .h10301, _ map: WiegandMap = .decimal, facility: WiegandFacility = .none,
                 overRange: WiegandOverRange = .refuse) -> WiegandEncoder {
        WiegandEncoder(format: format, map: map, facility: facility, overRange: overRange)
    }

    func frame(_ e: WiegandEncoder, _ payload: String, credential: CredentialInfo? = nil) -> WiegandFrame? {
        try? e.frame(payload: Array(payload.utf8), credential: credential).get()
    }

    func refusal(_ e: WiegandEncoder, _ payload: [UInt8], credential: CredentialInfo? = nil,
                 file: StaticString = #filePath, line: UInt = #line) -> String {
        switch e.frame(payload: payload, credential: credential) {
        case .success(let f):
            XCTFail("expected a refusal, got \(f.summary)", file: file, line: line)
            return ""
        case .failure(let r): return r.reason
        }
    }

    func refusal(_ e: WiegandEncoder, _ payload: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        refusal(e, Array(payload.utf8), file: file, line: line)
    }

    // MARK: decimal

    func testDecimalWithoutFacilityFillsFacilityAndCard() throws {
        // 90 * 65536 + 324: the payload carries both fields.
        let f = try XCTUnwrap(frame(encoder(), "5898564"))
        XCTAssertEqual(f.facility, 90)
        XCTAssertEqual(f.card, 324)
        XCTAssertEqual(f.bits.description, "00101101000000001010001000")
        XCTAssertFalse(f.truncated)
    }

    func testDecimalWithAFixedFacilityIsTheCardNumber() throws {
        let f = try XCTUnwrap(frame(encoder(facility: .fixed(90)), "324"))
        XCTAssertEqual(f.bits.description, "00101101000000001010001000")
    }

    func testLeadingZerosAreTheSameNumber() throws {
        XCTAssertEqual(frame(encoder(facility: .fixed(90)), "00000324")?.card, 324)
        // ... but never more than 20 digits, zeros or not.
        let r = refusal(encoder(facility: .fixed(90)), String(repeating: "0", count: 30) + "324")
        XCTAssertEqual(r, "the payload has 33 characters; wiegand-map decimal takes a number of at most 20 digits")
    }

    func testOutOfRangeIsRefusedWithTheNumberTheFormatAndTheRange() {
        XCTAssertEqual(refusal(encoder(facility: .fixed(90)), "65536"),
                       "card number 65536 is out of range for wiegand-format 26 (H10301): 0-65535 (wiegand-over-range = refuse)")
        XCTAssertEqual(refusal(encoder(), "16777216"),
                       "number (facility code and card number together, no wiegand-facility) 16777216 is out of range for wiegand-format 26 (H10301): 0-16777215 (wiegand-over-range = refuse)")
        XCTAssertEqual(refusal(encoder(.h10302), "34359738368"),
                       "number 34359738368 is out of range for wiegand-format 37-h10302 (H10302): 0-34359738367 (wiegand-over-range = refuse)")
        XCTAssertEqual(refusal(encoder(.raw(bits: 8)), "256"),
                       "number 256 is out of range for wiegand-format raw:8 (8 bits, no parity): 0-255 (wiegand-over-range = refuse)")
    }

    func testLowBitsKeepsTheLowBits() throws {
        let f = try XCTUnwrap(frame(encoder(facility: .fixed(90), overRange: .lowBits), String(65536 + 324)))
        XCTAssertEqual(f.card, 324)
        XCTAssertTrue(f.truncated)
        XCTAssertEqual(f.bits.description, "00101101000000001010001000")
        XCTAssertEqual(frame(encoder(.raw(bits: 4), overRange: .lowBits), "255")?.bits.description, "1111")
        XCTAssertEqual(frame(encoder(overRange: .lowBits), "18446744073709551615")?.bits.description,
                       WiegandFormat.h10301.encode(facility: 255, card: 65535)?.description)
    }

    // MARK: hostile numbers

    func testDigitsThatOverflow64Bits() {
        XCTAssertEqual(refusal(encoder(.raw(bits: 64)), "18446744073709551616"),
                       "the payload 18446744073709551616 is larger than the largest 64-bit number (18446744073709551615)")
        XCTAssertEqual(refusal(encoder(.raw(bits: 64)), "99999999999999999999"),
                       "the payload 99999999999999999999 is larger than the largest 64-bit number (18446744073709551615)")
        XCTAssertEqual(frame(encoder(.raw(bits: 64)), "18446744073709551615")?.card, .max)
    }

    func testTenThousandDigits() {
        let r = refusal(encoder(), String(repeating: "9", count: 10_000))
        XCTAssertEqual(r, "the payload has 10000 characters; wiegand-map decimal takes a number of at most 20 digits")
        XCTAssertLessThan(r.count, 200, "the refusal must not echo the payload")
    }

    func testNonDigitsInDecimalMode() {
        XCTAssertEqual(refusal(encoder(), "12A4"),
                       "the payload is not a decimal number: character 3 is 'A'; wiegand-map decimal takes only digits 0-9")
        XCTAssertEqual(refusal(encoder(), "-5"),
                       "the payload is not a decimal number: character 1 is '-'; wiegand-map decimal takes only digits 0-9")
        XCTAssertEqual(refusal(encoder(), " 5"),
                       "the payload is not a decimal number: character 1 is byte 0x20; wiegand-map decimal takes only digits 0-9")
        XCTAssertEqual(refusal(encoder(), [0x31, 0x00, 0x32]),
                       "the payload is not a decimal number: character 2 is byte 0x0; wiegand-map decimal takes only digits 0-9")
        XCTAssertEqual(refusal(encoder(), "1\u{1B}[31m"),
                       "the payload is not a decimal number: character 2 is byte 0x1B; wiegand-map decimal takes only digits 0-9")
        // Arabic-Indic digit three: a digit to Unicode, not to Wiegand.
        XCTAssertEqual(refusal(encoder(), "\u{663}"),
                       "the payload is not a decimal number: character 1 is byte 0xD9; wiegand-map decimal takes only digits 0-9")
        XCTAssertEqual(refusal(encoder(), ""), "the payload is empty; wiegand-map decimal needs digits 0-9")
        XCTAssertEqual(refusal(encoder(), "1e5"),
                       "the payload is not a decimal number: character 2 is 'e'; wiegand-map decimal takes only digits 0-9")
    }

    // MARK: hex

    func testHex() throws {
        XCTAssertEqual(frame(encoder(.raw(bits: 32), .hex), "DEADbeef")?.card, 0xDEADBEEF)
        XCTAssertEqual(frame(encoder(.raw(bits: 64), .hex), "FFFFFFFFFFFFFFFF")?.card, .max)
        XCTAssertEqual(frame(encoder(.h10301, .hex), "5A0144")?.bits.description, "00101101000000001010001000")
        XCTAssertEqual(refusal(encoder(.raw(bits: 64), .hex), "0x12"),
                       "the payload is not a hex number: character 2 is 'x'; wiegand-map hex takes only 0-9, a-f, A-F (no 0x)")
        XCTAssertEqual(refusal(encoder(.raw(bits: 64), .hex), "1FFFFFFFFFFFFFFFF"),
                       "the payload has 17 characters; wiegand-map hex takes a number of at most 16 hex digits")
        XCTAssertEqual(refusal(encoder(.raw(bits: 64), .hex), ""), "the payload is empty; wiegand-map hex needs hex digits 0-9, a-f")
    }

    // MARK: digits:A-B

    func testDigitsTakeCharactersByPosition() throws {
        // "SITE090-ID00324": site in 5-7, ID in 11-15.
        let e = encoder(.h10301, .digits(from: 11, to: 15), facility: .digits(from: 5, to: 7))
        let f = try XCTUnwrap(frame(e, "SITE090-ID00324"))
        XCTAssertEqual(f.facility, 90)
        XCTAssertEqual(f.card, 324)
        XCTAssertEqual(refusal(e, "SITE090-ID003"),
                       "the payload has 13 characters; wiegand-map digits:11-15 takes characters 11 to 15")
        XCTAssertEqual(refusal(e, "SITE090-ID0X324"),
                       "character 12 of the payload is 'X', not a digit 0-9 (wiegand-map digits:11-15)")
        XCTAssertEqual(refusal(e, "SITE9X0-ID00324"),
                       "character 6 of the payload is 'X', not a digit 0-9 (wiegand-facility digits:5-7)")
        XCTAssertEqual(refusal(e, "SITE999-ID00324"),
                       "facility code 999 is out of range for wiegand-format 26 (H10301): 0-255 (wiegand-over-range = refuse)")
    }

    // MARK: credential

    func testCredentialNumber() throws {
        let pass = CredentialInfo(format: "jwt", number: "324", keyID: "k1", tokenID: nil, expiresAt: 0)
        let e = encoder(.h10301, .credential, facility: .fixed(90))
        let f = try XCTUnwrap(try? e.frame(payload: Array("eyJhbGciOi...".utf8), credential: pass).get())
        XCTAssertEqual(f.bits.description, "00101101000000001010001000")
        XCTAssertEqual(refusal(encoder(map: .credential), Array("324".utf8), credential: nil),
                       "no verified credential in this read: wiegand-map credential sends only the number of a signed pass (credential-format)")
        let odd = CredentialInfo(format: "jwt", number: "user-42", keyID: "k1", tokenID: nil, expiresAt: 0)
        XCTAssertEqual(refusal(encoder(map: .credential), [], credential: odd),
                       "the credential number is not a decimal number: character 1 is 'u'; wiegand-map credential takes only digits 0-9")
    }

    func encoder(map: WiegandMap) -> WiegandEncoder { encoder(.h10301, map) }

    func testFrameForAReadUsesDoorData() throws {
        let symbol = DecodedSymbol(symbology: .qr, data: Array("token".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        let event = ReadEvent(seq: 1, wallTimeNanoseconds: 0, symbol: symbol, frame: 1, dequeuedAt: .now(), emittedAt: .now(),
                              doorData: Array("324".utf8))
        XCTAssertEqual(try encoder(facility: .fixed(90)).frame(for: event).get().card, 324)
    }

    // MARK: parsing

    func testParsingMapsAndFacilities() {
        XCTAssertEqual(WiegandMap.parse("decimal"), .decimal)
        XCTAssertEqual(WiegandMap.parse("HEX"), .hex)
        XCTAssertEqual(WiegandMap.parse("credential"), .credential)
        XCTAssertEqual(WiegandMap.parse("digits:3-8"), .digits(from: 3, to: 8))
        XCTAssertEqual(WiegandMap.parse("digits:1-20"), .digits(from: 1, to: 20))
        for bad in ["digits:0-5", "digits:5-3", "digits:1-21", "digits:3", "digits:a-b", "digits:-1-3", "digits:4097-4097",
                    "digits:3-8-9", "octal", ""] {
            XCTAssertNil(WiegandMap.parse(bad), bad)
        }
        XCTAssertEqual(WiegandFacility.parse("90"), .fixed(90))
        XCTAssertEqual(WiegandFacility.parse(""), WiegandFacility.none)
        XCTAssertEqual(WiegandFacility.parse("digits:1-3"), .digits(from: 1, to: 3))
        XCTAssertNil(WiegandFacility.parse("-1"))
        XCTAssertNil(WiegandFacility.parse("99999999999999999999999"))
        XCTAssertEqual(WiegandOverRange(rawValue: "low-bits"), .lowBits)
    }
}

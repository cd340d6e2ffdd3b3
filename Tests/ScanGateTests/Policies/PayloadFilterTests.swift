import XCTest
import Core
import Pipeline
import Policies
import Settings

final class PayloadFilterTests: XCTestCase {
    func verdict(_ payload: [UInt8], _ configure: (inout FilterSettings) -> Void) throws -> Verdict {
        var s = FilterSettings()
        configure(&s)
        return try PayloadFilter(settings: s).verdict(for: DecodedSymbol(symbology: .qr, data: payload, bounds: Rect(x: 0, y: 0, w: 1, h: 1)))
    }

    func testLengthLimits() throws {
        XCTAssertEqual(try verdict(Array("12345".utf8)) { $0.maxLength = 5 }, .accepted)
        XCTAssertEqual(try verdict(Array("123456".utf8)) { $0.maxLength = 5 },
                       .rejected(reason: "payload longer than max-length 5 (6 bytes)"))
        XCTAssertFalse(try verdict(Array("12".utf8)) { $0.minLength = 3 }.isAccepted)
    }

    func testCharacterClasses() throws {
        XCTAssertTrue(try verdict(Array("0123".utf8)) { $0.characters = .digits }.isAccepted)
        XCTAssertFalse(try verdict(Array("01a3".utf8)) { $0.characters = .digits }.isAccepted)
        XCTAssertTrue(try verdict(Array("Ab12".utf8)) { $0.characters = .alnum }.isAccepted)
        XCTAssertFalse(try verdict(Array("Ab-12".utf8)) { $0.characters = .alnum }.isAccepted)
        XCTAssertTrue(try verdict(Array("door 7!".utf8)) { $0.characters = .printable }.isAccepted)
        XCTAssertFalse(try verdict(Array("door\r\n".utf8)) { $0.characters = .printable }.isAccepted)
        XCTAssertTrue(try verdict(Array("Zürich".utf8)) { $0.characters = .text }.isAccepted)
        XCTAssertFalse(try verdict(Array("\u{1B}[2J".utf8)) { $0.characters = .text }.isAccepted)
        XCTAssertFalse(try verdict([0xFF, 0x41]) { $0.characters = .text }.isAccepted)
        XCTAssertTrue(try verdict([0xFF, 0x00]) { $0.characters = .any }.isAccepted)
    }

    func testPrefixAllowList() throws {
        XCTAssertTrue(try verdict(Array("EMP-0042".utf8)) { $0.allowPrefixes = ["VIS-", "EMP-"] }.isAccepted)
        XCTAssertFalse(try verdict(Array("XYZ-0042".utf8)) { $0.allowPrefixes = ["VIS-", "EMP-"] }.isAccepted)
    }

    /// A scalar that case-folds to an ASCII letter would pass `(?i)` as that letter: refused, and the
    /// reason names it. Ordinary letters outside ASCII still match a case-insensitive pattern.
    func testCaseFoldingLookalikesAreRefused() throws {
        let pattern = "(?i)ticket:[a-f0-9]{8}"
        XCTAssertTrue(try verdict(Array("TICKET:0123abcd".utf8)) { $0.allowRegex = pattern }.isAccepted)
        for lookalike in ["tic\u{212A}et:0123abcd", "tick\u{0130}t:0123abcd", "ticke\u{0131}:0123abcd"] {
            let v = try verdict(Array(lookalike.utf8)) { $0.allowRegex = pattern }
            XCTAssertFalse(v.isAccepted, lookalike)
        }
        let kelvin = try verdict(Array("tic\u{212A}et:0123abcd".utf8)) { $0.allowRegex = pattern }
        XCTAssertEqual(kelvin, .rejected(reason: "payload does not match allow-regex: it has U+212A, which case-insensitive matching would take for an ASCII letter"))
        XCTAssertTrue(try verdict(Array("CAF\u{C9}-1".utf8)) { $0.allowRegex = "(?i)caf\u{e9}-[0-9]" }.isAccepted,
                      "É folds to é, not to ASCII")
    }

    func testRegexMustMatchTheWholePayload() throws {
        XCTAssertTrue(try verdict(Array("T-123456".utf8)) { $0.allowRegex = "T-[0-9]{6}" }.isAccepted)
        XCTAssertFalse(try verdict(Array("T-123456\r\nOPEN".utf8)) { $0.allowRegex = "T-[0-9]{6}" }.isAccepted)
        XCTAssertFalse(try verdict([0xFF]) { $0.allowRegex = ".*" }.isAccepted, "non-UTF-8 never matches")
    }

    func testBadRegexIsAUsageError() {
        var s = FilterSettings()
        s.allowRegex = "(["
        XCTAssertThrowsError(try PayloadFilter(settings: s)) { error in
            XCTAssertTrue("\(error)".contains("allow-regex"))
        }
    }
}

import Core
import Platform
import XCTest

final class CoreJSONTests: XCTestCase {
    func testParsesEveryKindOfValueAndWritesItBack() throws {
        let text = #"{"a":1,"b":[true,false,null],"c":"x\u00e9\ud83d\ude00\n","d":-1.5e3,"e":{}}"#
        let v = try JSONValue.parse(text)
        XCTAssertEqual(v["a"]?.numberValue?.int64, 1)
        XCTAssertEqual(v["b"], .array([.bool(true), .bool(false), .null]))
        XCTAssertEqual(v["c"]?.stringValue, "xé😀\n")
        XCTAssertEqual(v["d"]?.numberValue?.double, -1500)
        XCTAssertNil(v["d"]?.numberValue?.int64)
        XCTAssertEqual(v["e"]?.objectValue?.count, 0)
        XCTAssertEqual(try JSONValue.parse(v.text), v)
        XCTAssertEqual(v.objectValue?.keys, ["a", "b", "c", "d", "e"])
    }

    func testLargeIntegersStayExact() throws {
        XCTAssertEqual(try JSONValue.parse("9007199254740993").numberValue?.int64, 9_007_199_254_740_993)
        XCTAssertNil(try JSONValue.parse("99999999999999999999").numberValue?.int64)
    }

    func testRefusesWhatIsNotStrictJSON() {
        let bad: [(String, String)] = [
            (#"{"alg":"ES256","alg":"none"}"#, "appears twice"),
            ("[1,2,]", "unexpected character"),
            ("01", "leading zero"),
            ("{} x", "after the value"),
            (#""\ud800""#, "low surrogate"),
            (#""\udc00""#, "low surrogate without"),
            ("\"a\u{01}\"", "control character"),
            ("'a'", "unexpected character"),
            ("", "end of input"),
            ("[1 2]", "expected ','"),
            ("NaN", "unexpected character"),
            ("1.", "fraction"),
            ("1e", "exponent"),
        ]
        for (text, reason) in bad {
            XCTAssertThrowsError(try JSONValue.parse(text), text) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(text): \(error)")
            }
        }
        XCTAssertThrowsError(try JSONValue.parse([0x22, 0xFF, 0x22])) { XCTAssertTrue("\($0)".contains("UTF-8")) }
    }

    func testBoundsDepthAndSize() {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        XCTAssertThrowsError(try JSONValue.parse(deep)) { XCTAssertTrue("\($0)".contains("nested deeper than 32")) }
        XCTAssertNoThrow(try JSONValue.parse(String(repeating: "[", count: 32) + String(repeating: "]", count: 32)))
        XCTAssertThrowsError(try JSONValue.parse("[" + String(repeating: "1,", count: 100) + "1]", maxBytes: 64)) {
            XCTAssertTrue("\($0)".contains("limit of 64"))
        }
    }

    func testBase64BothAlphabetsStrict() {
        XCTAssertEqual(Base64.encode([0xFB, 0xFF]), "+/8=")
        XCTAssertEqual(Base64.urlEncode([0xFB, 0xFF]), "-_8")
        XCTAssertEqual(Base64.urlDecode("-_8"), [0xFB, 0xFF])
        XCTAssertEqual(Base64.decode("+/8="), [0xFB, 0xFF])
        XCTAssertNil(Base64.urlDecode("-_8="), "padding is not base64url")
        XCTAssertNil(Base64.urlDecode("-_9"), "unused bits must be zero")
        XCTAssertNil(Base64.urlDecode("A"), "one character is no byte")
        XCTAssertNil(Base64.decode("+/8"), "standard base64 is padded")
        for n in 0..<20 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64.urlDecode(Base64.urlEncode(bytes)), bytes)
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
        }
    }

    func testHex() {
        XCTAssertEqual(Hex.string([0x0D, 0xFF]), "0DFF")
        XCTAssertEqual(Hex.string([0x0D, 0xFF], lowercase: true), "0dff")
        XCTAssertEqual(Hex.decode("0dFF"), [0x0D, 0xFF])
        XCTAssertNil(Hex.decode("0D F"))
        XCTAssertNil(Hex.decode("0G"))
    }
}

import Core
@testable import Credentials
import XCTest

/// Base45 (RFC 9285) with the RFC's own examples, and the strict CBOR decoder on hostile input.
final class CredentialEncodingTests: XCTestCase {
    // MARK: Base45

    func testBase45RFC9285Examples() throws {
        // RFC 9285 §4.3 (encoding) and §4.4 (decoding).
        XCTAssertEqual(Base45.encode(Array("AB".utf8)), "BB8")
        XCTAssertEqual(Base45.encode(Array("Hello!!".utf8)), "%69 VD92EX0")
        XCTAssertEqual(Base45.encode(Array("base-45".utf8)), "UJCLQE7W581")
        XCTAssertEqual(try Base45.decode("QED8WEX0"), Array("ietf!".utf8))
        for text in ["AB", "Hello!!", "base-45", "ietf!"] {
            XCTAssertEqual(try Base45.decode(Base45.encode(Array(text.utf8))), Array(text.utf8))
        }
    }

    func testBase45RoundTripsEveryByteAndLength() throws {
        var bytes: [UInt8] = []
        for n in 0..<300 {
            XCTAssertEqual(try Base45.decode(Base45.encode(bytes)), bytes, "length \(n)")
            bytes.append(UInt8(truncatingIfNeeded: n &* 37 &+ 255))
        }
        XCTAssertEqual(try Base45.decode(Base45.encode([0xFF, 0xFF])), [0xFF, 0xFF])   // "FGW", the largest triple
        XCTAssertEqual(Base45.encode([0xFF, 0xFF]), "FGW")
    }

    func testBase45RefusesWhatIsNotCanonical() {
        // RFC 9285 §6: "GGW" is 65536, more than two bytes hold.
        XCTAssertThrowsError(try Base45.decode("GGW")) { XCTAssertTrue("\($0)".contains("two bytes")) }
        XCTAssertThrowsError(try Base45.decode(":Z")) { XCTAssertTrue("\($0)".contains("one byte")) }   // 44 + 35*45 > 255
        XCTAssertThrowsError(try Base45.decode("BB8B"))      // 3n + 1 characters
        XCTAssertThrowsError(try Base45.decode("bb8"))       // lower case is not in the alphabet
        XCTAssertThrowsError(try Base45.decode("BB\n"))
        XCTAssertThrowsError(try Base45.decode(String(repeating: "0", count: 3 * 3000), maxBytes: 4096))
        XCTAssertEqual(try Base45.decode(""), [])
    }

    // MARK: CBOR

    func decode(_ hex: String) throws -> CBORValue {
        try CBORValue.decode(hexBytes(hex))
    }

    func testCBORDecodesTheCOSESubset() throws {
        XCTAssertEqual(try decode("00"), .unsigned(0))
        XCTAssertEqual(try decode("1903e8"), .unsigned(1000))
        XCTAssertEqual(try decode("27"), .negative(7))
        XCTAssertEqual(try decode("27").int64, -8)
        XCTAssertEqual(try decode("3bffffffffffffffff").int64, nil)   // -2^64 does not fit Int64
        XCTAssertEqual(try decode("4401020304"), .bytes([1, 2, 3, 4]))
        XCTAssertEqual(try decode("6449455446"), .text("IETF"))
        XCTAssertEqual(try decode("d28443a10127a0f640"), .tagged(18, .array([.bytes([0xA1, 0x01, 0x27]), .map(CBORMap()), .null, .bytes([])])))
        // RFC 8949 Appendix A: half, single and double precision.
        XCTAssertEqual(try decode("f93c00"), .float(1.0))
        XCTAssertEqual(try decode("f97bff"), .float(65504.0))
        XCTAssertEqual(try decode("f90001"), .float(5.960464477539063e-8))
        XCTAssertEqual(try decode("f9c400"), .float(-4.0))
        XCTAssertEqual(try decode("fa47c35000"), .float(100000.0))
        XCTAssertEqual(try decode("fb3ff199999999999a"), .float(1.1))
        XCTAssertEqual(try decode("a201020304")[mapKey: 1], .unsigned(2))
    }

    func testCBORRefusesHostileInput() {
        let cases: [(String, String)] = [
            ("9a ffffffff", "elements"),            // an array declaring 4 billion elements: refused before allocating
            ("9b 0000000100000000", "elements"),
            ("bb 00000000ffffffff", "elements"),    // a map likewise
            ("5a ffffffff 00", "byte string of"),
            ("7a 00010000 41", "text string of"),
            ("9f 01 ff", "indefinite"),
            ("5f 41 00 ff", "indefinite"),
            ("1c", "reserved"),
            ("ff", "break"),
            ("f0", "simple value"),
            ("f8 20", "simple value"),
            ("a2 01 02 01 03", "twice"),            // duplicate map key: a second alg cannot hide the first
            ("a1 40 01", "map key"),                // a byte-string key
            ("a1 f6 01", "map key"),
            ("62 c3 28", "UTF-8"),
            ("01 02", "after the item"),
            ("18", "end of input"),
            ("", "end of input"),
            (String(repeating: "81", count: 20) + "00", "nested deeper"),
            (String(repeating: "c1", count: 20) + "00", "nested deeper"),   // a long tag chain
        ]
        for (hex, expected) in cases {
            XCTAssertThrowsError(try decode(hex), hex) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(hex): \(error)")
            }
        }
        // The item limit: 600 small items in one flat array.
        let many = [0x99, 0x02, 0x58] + [UInt8](repeating: 0x00, count: 600)
        XCTAssertThrowsError(try CBORValue.decode(many, maxItems: 512)) { XCTAssertTrue("\($0)".contains("data items")) }
    }

    func testCBOREncodingIsShortestAndReadsBack() throws {
        let value = CBORValue.tagged(18, .array([.bytes([0xA1, 0x01, 0x27]), .map(CBORMap([(.int(4), .bytes(Array("k".utf8)))])!),
                                                  .bytes(Array(repeating: 7, count: 300)), .int(-65537), .int(1_796_000_000),
                                                  .text("Signature1"), .float(1.5), .bool(true), .null]))
        let bytes = value.encoded
        XCTAssertEqual(try CBORValue.decode(bytes), value)
        XCTAssertEqual(CBORValue.int(23).encoded, [0x17])
        XCTAssertEqual(CBORValue.int(24).encoded, [0x18, 0x18])
        XCTAssertEqual(CBORValue.int(-8).encoded, [0x27])
        XCTAssertEqual(CBORValue.int(1_796_000_000).encoded, [0x1A, 0x6B, 0x0C, 0xC9, 0x00])
    }

    func testFuzzFindHugeFloatClaimRendersAsJSON() throws {
        // cose fuzz find (Tests/Fuzz/corpus/cose/huge-float-claim): a claim of -8.99e307 was written as
        // "-inf" by JSONText.number (it scales by 1000 first), so the claims JSON did not parse.
        let input = hexBytes("a20aa204fbffdfffff3dffffff330020a233332e33")
        let claims = try TokenParser.claims(input, format: .cwt).get()
        let parsed = try JSONValue.parse(claims.json)
        XCTAssertEqual(parsed["10"]?["exp"]?.numberValue?.double, Double(bitPattern: 0xFFDF_FFFF_3DFF_FFFF))
        XCTAssertEqual(COSESign1.json(.float(1e300)), "1e+300")
        XCTAssertEqual(COSESign1.json(.float(.nan)), "null")
        XCTAssertEqual(COSESign1.json(.float(1.5)), "1.5")
    }

    func testFuzzFindClaimKeysThatShareAJSONNameStayDistinct() throws {
        // cose fuzz find (Tests/Fuzz/corpus/cose/colliding-keys): two integer keys beyond Int64 were both
        // written as "?", so the claims JSON repeated a member name and did not parse. The label 1 and the
        // text "iss" shared a name the same way.
        // {1: "a", "iss": "b", 2^64-1: 1, 2^64-2: 2, -2^64: 3, "18446744073709551615": 4}
        let input = hexBytes("a60161616369737361621bffffffffffffffff011bfffffffffffffffe023bffffffffffffffff0374"
                             + Array("18446744073709551615".utf8).map { String(format: "%02x", $0) }.joined() + "04")
        let claims = try TokenParser.claims(input, format: .cwt).get()
        let parsed = try JSONValue.parse(claims.json)
        XCTAssertEqual(parsed["iss"]?.stringValue, "a")
        XCTAssertEqual(parsed["iss~2"]?.stringValue, "b")
        XCTAssertEqual(parsed["18446744073709551615"]?.numberValue?.double, 1)
        XCTAssertEqual(parsed["18446744073709551614"]?.numberValue?.double, 2)
        XCTAssertEqual(parsed["-18446744073709551616"]?.numberValue?.double, 3)
        XCTAssertEqual(parsed["18446744073709551615~2"]?.numberValue?.double, 4)
        XCTAssertEqual(claims.issuer, "a")
    }
}

extension CBORValue {
    subscript(mapKey key: Int64) -> CBORValue? { mapValue?[key] }
}

/// "a1 01 02" → [0xA1, 0x01, 0x02] (spaces ignored).
func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { $0 != " " }.utf8)
    var out: [UInt8] = []
    var i = 0
    while i + 1 < digits.count {
        out.append(UInt8(String(decoding: digits[i...(i + 1)], as: UTF8.self), radix: 16) ?? 0)
        i += 2
    }
    return out
}

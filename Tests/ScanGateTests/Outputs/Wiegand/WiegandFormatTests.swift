import Foundation
import XCTest
import Wiegand
import Settings

/// The formats against vectors computed without the encoder: published frames, and the independent
/// Python reference Tests/HIL/guest/wiegand.py (written from the format definitions; the HIL decoder
/// uses the same file to read frames off gpio-sim).
final class WiegandFormatTests: XCTestCase {
    func bits(_ format: WiegandFormat, _ facility: UInt64, _ card: UInt64) -> String? {
        format.encode(facility: facility, card: card)?.description
    }

    func testH10301CheckVectorFromTheIssue() {
        XCTAssertEqual(bits(.h10301, 90, 324), "00101101000000001010001000")
    }

    func testPublishedFrames() {
        // Proxmark3 cheat sheet: `wiegand decode 2006f623ae` is H10301 FC 123 CN 4567 (low 26 bits).
        XCTAssertEqual(WiegandFormat.h10301.encode(facility: 123, card: 4567)?.value, 0x2006F623AE & 0x3FF_FFFF)
        // A Doppelganger reader's log: C1k35s, hex 2D4A64FB8E, company 2643, card 163271 (low 35 bits).
        XCTAssertEqual(WiegandFormat.corporate1000.encode(facility: 2643, card: 163271)?.value, 0x2D4A64FB8E & 0x7_FFFF_FFFF)
        // Proxmark3 tutorial: `lf hid decode 10001fc656` is H10304 FC 1 CN 516907 and H10302 CN 1041195.
        XCTAssertEqual(WiegandFormat.h10304.encode(facility: 1, card: 516907)?.value, 0x10001FC656)
        XCTAssertEqual(WiegandFormat.h10302.encode(facility: 0, card: 1041195)?.value, 0x10001FC656)
    }

    /// Every format, its field edges and 100 random values each, against the Python reference.
    func testAgreesWithTheIndependentPythonReference() throws {
        let script = TestFiles.repositoryRoot + "/Tests/HIL/guest/wiegand.py"
        let out = try runPython([script, "vectors", "--seed", "7", "--count", "100"])
        var checked = 0
        var formats = Set<String>()
        for line in out.split(separator: "\n") {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let name = try XCTUnwrap(object["format"] as? String)
            let format = try XCTUnwrap(WiegandFormat.parse(name), "Swift does not know format \(name)")
            let facility = try XCTUnwrap((object["facility"] as? NSNumber)?.uint64Value)
            let card = try XCTUnwrap((object["card"] as? NSNumber)?.uint64Value)
            let want = try XCTUnwrap(object["bits"] as? String)
            XCTAssertEqual(bits(format, facility, card), want, "\(name) facility \(facility) card \(card)")
            checked += 1
            formats.insert(name)
        }
        XCTAssertEqual(formats, ["26", "34", "35", "37", "37-h10302", "raw:1", "raw:8", "raw:26", "raw:40", "raw:64"])
        XCTAssertGreaterThan(checked, 1000)
    }

    /// The guest decoder and its checks pass a clean synthetic trace and catch every fault it should.
    func testTheHILDecoderSelfTestPasses() throws {
        let out = try runPython([TestFiles.repositoryRoot + "/Tests/HIL/guest/wiegand.py", "selftest"])
        XCTAssertTrue(out.contains("selftest: ok"), out)
    }

    func testFieldsAndLimits() {
        XCTAssertEqual(WiegandFormat.h10301.maxFacility, 255)
        XCTAssertEqual(WiegandFormat.h10301.maxCard, 65535)
        XCTAssertEqual(WiegandFormat.corporate1000.maxFacility, 4095)
        XCTAssertEqual(WiegandFormat.corporate1000.maxCard, 1_048_575)
        XCTAssertEqual(WiegandFormat.h10304.maxCard, 524_287)
        XCTAssertEqual(WiegandFormat.h10302.maxCard, 34_359_738_367)
        XCTAssertEqual(WiegandFormat.h10302.facilityBits, 0)
        XCTAssertNil(WiegandFormat.h10301.encode(facility: 256, card: 1))
        XCTAssertNil(WiegandFormat.h10301.encode(facility: 1, card: 65536))
        XCTAssertNil(WiegandFormat.h10302.encode(facility: 1, card: 1), "H10302 has no facility field")
        XCTAssertEqual(bits(.raw(bits: 8), 0, 0xA5), "10100101")
        XCTAssertEqual(bits(.raw(bits: 64), 0, .max), String(repeating: "1", count: 64))
        XCTAssertNil(WiegandFormat.raw(bits: 4).encode(facility: 0, card: 16))
    }

    func testParsingFormatNames() {
        XCTAssertEqual(WiegandFormat.parse("26"), .h10301)
        XCTAssertEqual(WiegandFormat.parse("34"), .n10002)
        XCTAssertEqual(WiegandFormat.parse("35"), .corporate1000)
        XCTAssertEqual(WiegandFormat.parse("37"), .h10304)
        XCTAssertEqual(WiegandFormat.parse("37-H10302"), .h10302)
        XCTAssertEqual(WiegandFormat.parse("raw:1"), .raw(bits: 1))
        XCTAssertEqual(WiegandFormat.parse("raw:64"), .raw(bits: 64))
        for bad in ["", "25", "raw:", "raw:0", "raw:65", "raw:-1", "raw:1x", "raw:0064", "36", "26 "] {
            XCTAssertNil(WiegandFormat.parse(bad), bad)
        }
        for f in WiegandFormat.named + [.raw(bits: 40)] { XCTAssertEqual(WiegandFormat.parse(f.name), f) }
    }

    func testBitsText() {
        XCTAssertEqual(WiegandBits("0101")?.value, 5)
        XCTAssertEqual(WiegandBits("0101")?.description, "0101")
        XCTAssertNil(WiegandBits("012"))
        XCTAssertNil(WiegandBits(""))
        XCTAssertNil(WiegandBits(String(repeating: "1", count: 65)))
        XCTAssertNil(WiegandBits(value: 16, count: 4))
    }
}

/// Runs python3 with `args`; throws with its stderr when it fails.
func runPython(_ args: [String]) throws -> String {
    let result = try TestProcess.run("/usr/bin/python3", args)
    guard result.status == 0 else {
        throw NSError(domain: "python3 \(args.joined(separator: " ")) exited \(result.status)", code: 1,
                      userInfo: [NSLocalizedDescriptionKey: result.stdoutText + result.stderr])
    }
    return result.stdoutText
}

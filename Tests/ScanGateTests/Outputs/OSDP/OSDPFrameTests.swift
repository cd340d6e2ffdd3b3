import XCTest
@testable import OSDP
import Platform

/// The frame layer: check characters against published values and frames captured from real devices,
/// and the reader's resynchronisation on hostile byte streams.
final class OSDPFrameTests: XCTestCase {
    // MARK: - Check characters

    func testCRCMatchesTheCatalogueCheckValue() {
        // CRC-16/AUG-CCITT's catalogue check value (poly 0x1021, init 0x1D0F).
        XCTAssertEqual(OSDPCheck.crc16(Array("123456789".utf8)), 0xE5CC)
    }

    func testCRCOfFramesCapturedFromRealDevices() {
        // libosdp's CP polling an HID RPK40 at address 0x18 (wire log in libosdp issue #22):
        // "[wire TX 9]: ff 53 18 08 00 05 60 ad 9f", and the reader's ACK "ff 53 98 08 00 05 40 1f 99".
        XCTAssertEqual(OSDPCheck.field([0x53, 0x18, 0x08, 0x00, 0x05, 0x60], crc: true), [0xAD, 0x9F])
        XCTAssertEqual(OSDPCheck.field([0x53, 0x98, 0x08, 0x00, 0x05, 0x40], crc: true), [0x1F, 0x99])
        // The same reader's NAK 01: "ff 53 98 09 00 06 41 01 81 dd".
        XCTAssertEqual(OSDPCheck.field([0x53, 0x98, 0x09, 0x00, 0x06, 0x41, 0x01], crc: true), [0x81, 0xDD])
        // A card reader's PDID at address 1 (libosdp issue #274):
        // "53 81 14 00 04 45 18 68 CB 00 00 68 44 96 B7 02 01 00 F4 0C".
        let pdid = OSDPTest.bytes("5381140004451868CB0000684496B7020100")
        XCTAssertEqual(OSDPCheck.field(pdid, crc: true), [0xF4, 0x0C])
    }

    func testChecksumIsTheTwosComplementOfTheSum() {
        // 53 00 07 00 00 60: sum 0xBA, checksum 0x46; a frame with its checksum sums to 0.
        let head: [UInt8] = [0x53, 0x00, 0x07, 0x00, 0x00, 0x60]
        XCTAssertEqual(OSDPCheck.checksum(head), 0x46)
        XCTAssertEqual((head + [0x46]).reduce(UInt8(0)) { $0 &+ $1 }, 0)
    }

    func testBuilderWritesLengthControlAndCheck() {
        XCTAssertEqual(Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 1, crc: true, code: 0x40)), "538008000540689F")
        XCTAssertEqual(Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 0, crc: false, code: 0x40)), "538007000040E6")
    }

    // MARK: - Reader

    private func frames(_ events: [OSDPFrameEvent]) -> [String] {
        events.compactMap { if case .frame(let f) = $0 { return Hex.string(f.bytes) + (f.hadMark ? "+mark" : "") } else { return nil } }
    }

    func testReadsARealFrameWithAndWithoutTheMark() {
        var reader = OSDPFrameReader()
        XCTAssertEqual(frames(reader.feed(OSDPTest.bytes("FF5318080005" + "60AD9F"), at: OSDPTest.t0)), ["5318080005" + "60AD9F+mark"])
        XCTAssertEqual(frames(reader.feed(OSDPTest.bytes("5318080005" + "60AD9F"), at: OSDPTest.t0)), ["5318080005" + "60AD9F"])
    }

    func testFrameSplitAcrossReadsAndTwoFramesInOneRead() {
        var reader = OSDPFrameReader()
        let poll = OSDPTest.bytes("FF530008000460EBAA")
        XCTAssertEqual(frames(reader.feed(poll[0..<3], at: OSDPTest.at(0))), [])
        XCTAssertTrue(reader.isInsideFrame)
        XCTAssertEqual(frames(reader.feed(poll[3...], at: OSDPTest.at(5))), ["530008000460EBAA+mark"])
        XCTAssertEqual(frames(reader.feed(poll + poll, at: OSDPTest.at(10))).count, 2)
    }

    func testGarbageBeforeAFrameIsSkipped() {
        var reader = OSDPFrameReader()
        let noise = OSDPTest.bytes("00FF12FFFF53") // ends in a false SOM with a too-short length after it
        let events = reader.feed(noise + OSDPTest.bytes("0100") + OSDPTest.bytes("FF530008000460EBAA"), at: OSDPTest.t0)
        XCTAssertEqual(frames(events), ["530008000460EBAA+mark"])
    }

    func testBadCRCIsReportedAndAFrameInsideItIsStillFound() {
        var reader = OSDPFrameReader()
        // A header claiming 20 bytes whose "body" holds a whole genuine POLL: the CRC of the 20 bytes
        // fails, and the rescan finds the POLL after the first SOM.
        let genuine = OSDPTest.bytes("530008000460EBAA")
        let fake = OSDPTest.bytes("5300140004") + genuine + OSDPTest.bytes("0000000000000000")
        let events = reader.feed(fake.prefix(20), at: OSDPTest.t0)
        XCTAssertTrue(events.contains(.badCheck(length: 20)), "\(events)")
        XCTAssertEqual(frames(events), ["530008000460EBAA"])
    }

    func testOversizeLengthIsRefusedBeforeBuffering() {
        var reader = OSDPFrameReader(maxFrameLength: 64)
        // Length 0xFFFF: refused at the header (5 bytes in), nothing more is buffered.
        let events = reader.feed(OSDPTest.bytes("5300FFFF04"), at: OSDPTest.t0)
        XCTAssertEqual(events, [.badLength(length: 0xFFFF)])
        XCTAssertFalse(reader.isInsideFrame)
        // The next frame right after it is found.
        XCTAssertEqual(frames(reader.feed(OSDPTest.bytes("FF530008000460EBAA"), at: OSDPTest.t0)), ["530008000460EBAA+mark"])
    }

    func testLengthBelowTheSmallestFrameIsNotAFrame() {
        var reader = OSDPFrameReader()
        XCTAssertEqual(reader.feed(OSDPTest.bytes("5300060004"), at: OSDPTest.t0), [.badLength(length: 6)])
        // With the security-block flag the smallest frame is two bytes longer.
        XCTAssertEqual(reader.feed(OSDPTest.bytes("530009000C"), at: OSDPTest.t0), [.badLength(length: 9)])
    }

    func testAFrameThatStopsIsDroppedAfterTheInterCharacterTimeout() {
        var reader = OSDPFrameReader(interCharacterTimeoutMs: 50)
        let poll = OSDPTest.bytes("FF530008000460EBAA")
        _ = reader.feed(poll.prefix(6), at: OSDPTest.at(0))
        // 60 ms later a whole POLL arrives: the stale half is dropped, the new frame read cleanly.
        let events = reader.feed(poll, at: OSDPTest.at(60))
        XCTAssertEqual(events.first, .interrupted(received: 6))
        XCTAssertEqual(frames(events), ["530008000460EBAA+mark"])
    }

    func testMemoryStaysBoundedOnAnEndlessStreamOfSOMs() {
        var reader = OSDPFrameReader(maxFrameLength: 128)
        let junk = [UInt8](repeating: 0x53, count: 10_000)
        let events = reader.feed(junk, at: OSDPTest.t0)
        XCTAssertTrue(frames(events).isEmpty)
        // 0x5353 = 21331 bytes is above the limit: every header is refused, nothing is held.
        XCTAssertLessThan(events.count, junk.count + 1)
    }
}

/// The doctor's passive view of a line.
final class OSDPBusSummaryTests: XCTestCase {
    func testAddressesSecureCommandsRepliesAndDamage() {
        var reader = OSDPFrameReader()
        var summary = OSDPBusSummary()
        XCTAssertEqual(summary.description, "no traffic from a panel")
        let chlng = OSDPFrameBuilder.build(address: 5, sequence: 0, crc: true, securityBlock: [3, 0x11, 1], code: 0x76,
                                           data: [1, 2, 3, 4, 5, 6, 7, 8])
        let bytes = OSDPTest.bytes("FF530008000460EBAA") + chlng + OSDPTest.bytes("FF5381080004400806") + OSDPTest.bytes("FF530008000460EBAB")
        summary.add(reader.feed(bytes, at: OSDPTest.t0))
        XCTAssertEqual(summary.commandsByAddress, [0: 1, 5: 1])
        XCTAssertEqual(summary.repliesByAddress, [1: 1])
        XCTAssertEqual(summary.secureCommands, 1)
        XCTAssertEqual(summary.challenges, 1)
        XCTAssertEqual(summary.damaged, 1)
        XCTAssertEqual(summary.description,
                       "commands for address 0, address 5 (2 in all, 1 with a security block); replies from address 1; 1 damaged frame(s)")
    }
}

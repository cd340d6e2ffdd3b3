import XCTest
@testable import Core
@testable import OSDP
import Platform

/// The PD state machine, checked byte for byte. Expected frames were computed outside Swift
/// (Python, CRC-16/AUG-CCITT written again) and are spelled out here.
final class OSDPPeripheralTests: XCTestCase {
    // Frames to address 0 (commands) and from it (replies), mark included unless named otherwise.
    let poll0 = "FF530008000460EBAA", ack0 = "FF53800800044059AC"
    let poll1 = "FF530008000560DA99", ack1 = "FF538008000540689F"
    let poll2 = "FF53000800066089CC", nak04seq2 = "FF53800900064104E29A"
    let nak04seq1 = "FF53800900054104B2C3"
    let nak03 = "FF538009000441036584", nak02 = "FF538009000441024494"
    let nak06 = "FF53800900044106C0D4", nak05 = "FF53800900044105A3E4"

    // MARK: - Link layer

    func testPollIsAcknowledgedWithTheSameSequenceAndCheckType() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1])
        // Checksum in, checksum out; no mark in, no mark out.
        XCTAssertEqual(OSDPTest.send(pd, "FF53000700006046"), ["FF538007000040E6"])
        XCTAssertEqual(OSDPTest.send(pd, "530008000460EBAA"), ["53800800044059AC"])
    }

    func testTheFirstCommandMustStartAtSequenceZero() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll1), [nak04seq1], "after a restart the PD expects 0")
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
    }

    func testASkippedSequenceNumberIsNAK04AndChangesNothing() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        XCTAssertEqual(OSDPTest.send(pd, poll2), [nak04seq2], "2 after 0")
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1], "1 is still the one due")
    }

    func testARepeatedSequenceWithADifferentCommandIsNAK04() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1])
        // LSTAT with sequence 1 again: not a retry of the POLL.
        let lstat1 = Hex.string(OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x64))
        XCTAssertEqual(OSDPTest.send(pd, "FF" + lstat1), [nak04seq1])
    }

    func testSequenceZeroResetsTheLinkAtAnyTime() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1])
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1])
    }

    func testARetriedSequenceZeroCommandIsNotActedOnTwice() throws {
        let pd = try OSDPTest.peripheral()
        let led = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x69,
                                         data: OSDPTest.bytes("0000" + "00000000000000" + "0101000202"))
        let first = pd.receive(led, at: OSDPTest.t0)
        let again = pd.receive(led, at: OSDPTest.at(210))
        XCTAssertEqual(first.first?.reply, again.first?.reply)
        XCTAssertEqual(first.flatMap(\.effects).filter { if case .feedback = $0 { return true } else { return false } }.count, 1)
        XCTAssertEqual(again.flatMap(\.effects), [])
        XCTAssertEqual(OSDPTest.send(pd, poll1), [ack1], "the link goes on from sequence 0")
    }

    func testOtherAddressesAndOtherPDsRepliesAreNeverAnswered() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, "FF530508000460BC89"), [], "a POLL for address 5")
        XCTAssertEqual(OSDPTest.send(pd, "FF5381080004400806"), [], "PD 1 answering the panel")
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
    }

    func testABroadcastIsAnsweredFromTheBroadcastReplyAddress() throws {
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 9))
        XCTAssertEqual(OSDPTest.send(pd, "FF537F0800046094D2"), ["FF53FF0800044026D4"])
    }

    func testAFrameWithAWrongCRCIsNotAnswered() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, "FF530008000460EBAB"), [], "the spec: only a frame with a good check is processed")
        XCTAssertEqual(OSDPTest.send(pd, "FF53000700006047"), [], "a wrong checksum")
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0], "and the link carries on")
        XCTAssertEqual(pd.badFrames, 2)
    }

    func testATruncatedFrameIsDroppedAndTheNextOneAnswered() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, "FF5300080004", at: 0), [])
        XCTAssertEqual(OSDPTest.send(pd, poll0, at: 80), [ack0], "the half frame timed out (50 ms) before the next one")
    }

    func testAnOversizeLengthIsSkippedSilently() throws {
        let pd = try OSDPTest.peripheral()
        // Length 0x05A1 = 1441, one above the largest packet the spec allows: not a frame.
        XCTAssertEqual(OSDPTest.send(pd, "FF5300A1050460" + poll0), [ack0])
        XCTAssertEqual(pd.badFrames, 1)
    }

    // MARK: - Commands and their NAKs

    func testUnknownCommandIsNAK03AndBadLengthsAreNAK02() throws {
        let pd = try OSDPTest.peripheral()
        // osdp_BIOREAD (0x73): not implemented by this reader.
        let bioread = "FF" + Hex.string(OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x73, data: [0, 0, 0, 0]))
        XCTAssertEqual(OSDPTest.send(pd, bioread), [nak03], "osdp_BIOREAD")
        let pd2 = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd2, "FF53000900046000F155"), [nak02], "POLL with a data byte")
    }

    func testRequiredSecureChannelRefusesPlainCommandsButAnswersIDAndCAP() throws {
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .required, key: .installDefault))
        XCTAssertEqual(OSDPTest.send(pd, poll0), [nak06])
        let id1 = "FF" + Hex.string(OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x61, data: [0]))
        let reply = try XCTUnwrap(OSDPTest.send(pd, id1).first)
        // PDID: vendor 0C 0B 0A, model 21, version 01, serial 44 33 22 11, firmware 01 02 03.
        XCTAssertEqual(reply, "FF" + Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 1, crc: true, code: 0x45,
                                                                        data: OSDPTest.bytes("0C0B0A21014433221101020" + "3"))))
        XCTAssertTrue(reply.hasPrefix("FF53801400054" + "50C0B0A2101443322110102"))
    }

    func testSecureOffRefusesSecurityBlocksWithNAK05() throws {
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .off))
        let chlng = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, securityBlock: [3, 0x11, 1], code: 0x76,
                                           data: [1, 2, 3, 4, 5, 6, 7, 8])
        XCTAssertEqual(pd.receive(chlng, at: OSDPTest.t0).compactMap { $0.reply.map { Hex.string($0) } }, [String(nak05.dropFirst(2))])
    }

    func testCapabilitiesAreTruthful() throws {
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .required, key: nil, installMode: true))
        let cap = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x62, data: [0])
        let reply = try XCTUnwrap(pd.receive(cap, at: OSDPTest.t0).first?.reply)
        let data = Array(reply[6..<(reply.count - 2)])
        // (function, compliance, items): card data as bits; tri-colour timed LED x1; timed buzzer x1;
        // no text display; CRC-16; AES-128 with the default key accepted (install mode, no key yet);
        // receive buffer 1440 = 0x05A0; OSDP 2.2.
        XCTAssertEqual(Hex.string(data), "030100" + "040401" + "050201" + "060000" + "080100" + "090101" + "0AA005" + "100200")
    }

    /// Issue 19 item 4: with a key installed, install mode left on does not offer SCBK-D in osdp_PDCAP
    /// (function 9: AES-128, items 00: the default key is not accepted).
    func testCapabilitiesDoNotOfferTheDefaultKeyWhenAKeyIsInstalled() throws {
        let key = try XCTUnwrap(OSDPKey(bytes: Array(0x40...0x4F)))
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .required, key: key, installMode: true))
        XCTAssertFalse(pd.installMode, "a key is installed: install mode is not open")
        let cap = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x62, data: [0])
        let reply = try XCTUnwrap(pd.receive(cap, at: OSDPTest.t0).first?.reply)
        XCTAssertEqual(Hex.string(reply), Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 0, crc: true, code: 0x46,
            data: OSDPTest.bytes("030100" + "040401" + "050201" + "060000" + "080100" + "090100" + "0AA005" + "100200"))))
    }

    func testLocalStatusReportsNormalTamperAndPower() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, "FF5300080004646FEA"), ["FF53800A00044800002EB1"])
    }

    // MARK: - Reads

    func testAReadGoesOutOnceInRAWEvenWhenThePanelRetries() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        _ = pd.enqueue(.raw(seq: 7, bytes: Array("QR1".utf8), emittedAt: OSDPTest.at(0)))
        let steps = pd.receive(OSDPTest.bytes(poll1), at: OSDPTest.at(10))
        // RAW: reader 0, format 0, 24 bits (18 00), "QR1".
        let raw = "FF" + Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 1, crc: true, code: 0x50, data: OSDPTest.bytes("00001800515231")))
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [raw])
        XCTAssertEqual(steps.flatMap(\.effects), [.readSent(seq: 7)])
        // The panel did not get it and sends the same POLL again: the same RAW, and nothing sent twice.
        let retry = pd.receive(OSDPTest.bytes(poll1), at: OSDPTest.at(220))
        XCTAssertEqual(retry.compactMap { $0.reply.map { Hex.string($0) } }, [raw])
        XCTAssertEqual(retry.flatMap(\.effects), [])
        XCTAssertEqual(OSDPTest.send(pd, poll2, at: 300), ["FF5380080006403BCA"], "then ACK: the queue is empty")
    }

    func testAReadOlderThanItsTTLIsDroppedNotSentLate() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        _ = pd.enqueue(.raw(seq: 3, bytes: [0x41], emittedAt: OSDPTest.at(0)))
        let steps = pd.receive(OSDPTest.bytes(poll1), at: OSDPTest.at(5001))
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [ack1])
        XCTAssertEqual(steps.flatMap(\.effects).count, 1)
        guard case .readDropped(seq: 3, let reason)? = steps.flatMap(\.effects).first else { return XCTFail("\(steps)") }
        XCTAssertTrue(reason.contains("osdp-ttl-ms"), reason)
    }

    func testWiegandBitsAreFormatOneLeftJustified() {
        // 26 bits, H10301 FC 90 CN 324 (door.md): 0010 1101 0000 0000 1010 0010 00.
        let bits = "00101101000000001010001000".map { $0 == "1" }
        let read = OSDPCardRead.wiegand(seq: 1, bits: bits, emittedAt: OSDPTest.t0)
        XCTAssertEqual(Hex.string(read.rawReplyData), "00011A00" + "2D00A200")
    }

    // MARK: - Panel offline

    func testSilenceForEightSecondsIsOfflineAndDropsTheChannel() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(pd.tick(at: OSDPTest.at(7999)), [])
        XCTAssertEqual(pd.tick(at: OSDPTest.at(8001)), [.link(online: false, detail: "no command from the panel within 8.0 s of start")])
        XCTAssertEqual(pd.tick(at: OSDPTest.at(9000)), [], "reported once")
        let steps = pd.receive(OSDPTest.bytes(poll0), at: OSDPTest.at(10_000))
        XCTAssertEqual(steps.flatMap(\.effects), [.link(online: true, detail: "polled at address 0")])
        XCTAssertEqual(pd.tick(at: OSDPTest.at(18_001)), [.link(online: false, detail: "no command from the panel for 8.0 s")])
    }

    // MARK: - LED, BUZ, TEXT

    func testLEDAndBuzzerBecomeFeedbackCommandsAndAreNotReplayed() throws {
        let pd = try OSDPTest.peripheral()
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        // LED 0: temporary cancel; permanent amber 1 on / 4 off (100 ms units). Plus a record for LED 1,
        // which this reader does not have.
        let led = OSDPTest.bytes("0000" + "01000000000000" + "0101040300") + OSDPTest.bytes("0001" + "02050502001E00" + "0101000101")
        let ledFrame = OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x69, data: led)
        let steps = pd.receive(ledFrame, at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [String(ack1.dropFirst(2))])
        XCTAssertEqual(steps.flatMap(\.effects), [.feedback(FeedbackCommand(led: LEDCommand(
            temporary: .cancel, permanent: LEDBlink(onColor: .amber, offColor: .off, onMs: 100, offMs: 400))))])
        XCTAssertEqual(pd.receive(ledFrame, at: OSDPTest.t0).flatMap(\.effects), [], "a retry plays nothing")

        // BUZ: default tone 3 on / 2 off, count 0 (until replaced); then tone 1 (off).
        let buz = OSDPFrameBuilder.build(address: 0, sequence: 2, crc: true, code: 0x6A, data: [0, 2, 3, 2, 0, 0, 1, 0, 0, 0])
        XCTAssertEqual(pd.receive(buz, at: OSDPTest.t0).flatMap(\.effects), [
            .feedback(FeedbackCommand(tone: ToneCommand(onMs: 300, offMs: 200, duration: .untilReplaced))),
            .feedback(FeedbackCommand(tone: .silence)),
        ])
        let buz3 = OSDPFrameBuilder.build(address: 0, sequence: 3, crc: true, code: 0x6A, data: [0, 2, 1, 1, 3])
        XCTAssertEqual(pd.receive(buz3, at: OSDPTest.t0).flatMap(\.effects), [
            .feedback(FeedbackCommand(tone: ToneCommand(onMs: 100, offMs: 100, duration: .cycles(3)))),
        ])
    }

    func testLEDRecordsThePDCannotProcessAreNAK09() throws {
        let pd = try OSDPTest.peripheral()
        // Temporary "set" with on and off time both 0.
        let led = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x69, data: OSDPTest.bytes("0000020000020000010000000000"))
        XCTAssertEqual(pd.receive(led, at: OSDPTest.t0).compactMap { $0.reply.map { Hex.string($0) } },
                       [Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 0, crc: true, code: 0x41, data: [9]))])
        // 13 bytes: not a whole record.
        let short = OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x69, data: [UInt8](repeating: 0, count: 13))
        XCTAssertEqual(pd.receive(short, at: OSDPTest.t0).first?.reply.map { $0[5...6] }, [0x41, 0x02])
    }

    func testTextIsAcknowledgedAndReported() throws {
        let pd = try OSDPTest.peripheral()
        let text = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x6B, data: [0, 1, 0, 0, 0, 5] + Array("Hello".utf8))
        let steps = pd.receive(text, at: OSDPTest.t0)
        XCTAssertEqual(steps.flatMap(\.effects).last, .text("Hello"))
        XCTAssertEqual(steps.first?.reply.map { $0[5] }, 0x40)
    }

    // MARK: - COMSET

    func testComsetRepliesThenMovesToTheNewAddressAndSpeed() throws {
        let store = MemoryOSDPStore()
        let pd = try OSDPTest.peripheral(store: store)
        XCTAssertEqual(OSDPTest.send(pd, poll0), [ack0])
        // COMSET: address 5, 19200 baud (00 4B 00 00).
        let comset = OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x6E, data: [5, 0x00, 0x4B, 0x00, 0x00])
        let steps = pd.receive(comset, at: OSDPTest.t0)
        // osdp_COM from the old address with the new settings.
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } },
                       [Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: 1, crc: true, code: 0x54, data: [5, 0x00, 0x4B, 0, 0]))])
        XCTAssertEqual(steps.flatMap(\.effects).last, .switchLink(address: 5, baud: 19200))
        XCTAssertEqual(store.links.map { "\($0.0)@\($0.1)" }, ["5@19200"], "saved before the reply")
        XCTAssertEqual(OSDPTest.send(pd, poll2), [], "address 0 is no longer this PD")
        let poll2at5 = "FF" + Hex.string(OSDPFrameBuilder.build(address: 5, sequence: 2, crc: true, code: 0x60))
        XCTAssertEqual(OSDPTest.send(pd, poll2at5), ["FF" + Hex.string(OSDPFrameBuilder.build(address: 0x85, sequence: 2, crc: true, code: 0x40))])
    }

    func testComsetToAnUnsupportedSpeedRepeatsTheCurrentSettings() throws {
        let store = MemoryOSDPStore()
        let pd = try OSDPTest.peripheral(store: store)
        let comset = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x6E, data: [5, 0x60, 0x09, 0, 0]) // 2400 baud
        let steps = pd.receive(comset, at: OSDPTest.t0)
        XCTAssertEqual(steps.first?.reply.map { Array($0[5...10]) }, [0x54, 0, 0x80, 0x25, 0, 0], "COM: address 0, 9600")
        XCTAssertFalse(steps.flatMap(\.effects).contains { if case .switchLink = $0 { return true } else { return false } })
        XCTAssertTrue(store.links.isEmpty)
        store.failing = true
        let wanted = OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, code: 0x6E, data: [5, 0x00, 0x4B, 0, 0])
        XCTAssertEqual(pd.receive(wanted, at: OSDPTest.t0).first?.reply.map { Array($0[5...10]) }, [0x54, 0, 0x80, 0x25, 0, 0],
                       "a COMSET that cannot be saved is not applied")
    }

    func testComsetInPlainTextIsRefusedWhenTheChannelIsRequired() throws {
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .required, key: .installDefault))
        let comset = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, code: 0x6E, data: [5, 0x00, 0x4B, 0, 0])
        XCTAssertEqual(pd.receive(comset, at: OSDPTest.t0).compactMap { $0.reply.map { Hex.string($0) } }, [String(nak06.dropFirst(2))])
    }
}

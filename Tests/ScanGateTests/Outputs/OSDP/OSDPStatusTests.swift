import XCTest
@testable import Core
@testable import OSDP
import Platform

/// Issue 24: what a certified reader reports and answers besides reads: tamper and power (osdp_LSTATR),
/// the inputs (osdp_ISTATR), both sent unsolicited in reply to a poll when they change; osdp_MFG's one
/// documented command; osdp_KEEPACTIVE and osdp_ACURXSIZE honoured.
final class OSDPStatusTests: XCTestCase {
    private var sequence: UInt8 = 0

    /// One command in plain text with the next sequence number; the reply's code and data.
    private func exchange(_ pd: OSDPPeripheral, _ code: UInt8, _ data: [UInt8] = [], at ms: Double = 0,
                          file: StaticString = #filePath, line: UInt = #line) -> (code: UInt8, data: [UInt8])? {
        let frame = OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, code: code, data: data)
        sequence = sequence == 3 ? 1 : sequence + 1
        guard let reply = pd.receive(frame, at: OSDPTest.at(ms)).first?.reply, reply.count >= 8 else {
            XCTFail("no reply to command \(code)", file: file, line: line)
            return nil
        }
        // SOM, address, length (2), control, code, data, CRC (2).
        return (reply[5], Array(reply[6..<(reply.count - 2)]))
    }

    private func configuration(inputs: Int = 2) -> OSDPPeripheralConfiguration {
        var c = OSDPTest.configuration()
        c.inputCount = inputs
        c.buildID = "scangate 0.1.0"
        return c
    }

    func testLocalStatusReportsTamperAndPowerAsTheyAre() throws {
        let pd = try OSDPTest.peripheral(configuration())
        XCTAssertEqual(exchange(pd, 0x64)?.data, [0, 0])
        pd.update(OSDPReaderStatus(tamper: true, powerFailure: false, inputs: [true, false]))
        let r = try XCTUnwrap(exchange(pd, 0x64))
        XCTAssertEqual(r.code, 0x48)
        XCTAssertEqual(r.data, [1, 0], "tamper, power normal")
        pd.update(OSDPReaderStatus(tamper: true, powerFailure: true, inputs: [true, false]))
        XCTAssertEqual(exchange(pd, 0x64)?.data, [1, 1])
    }

    func testAChangeIsSentUnsolicitedOnceInReplyToTheNextPoll() throws {
        let pd = try OSDPTest.peripheral(configuration())
        XCTAssertEqual(exchange(pd, 0x60)?.code, 0x40, "nothing changed: ACK")
        pd.update(OSDPReaderStatus(tamper: true, inputs: [true, true]))
        pd.enqueue(.raw(seq: 1, bytes: [0x41], emittedAt: OSDPTest.t0)).forEach { XCTFail("\($0)") }
        // Tamper first, then the inputs, then the read; then ACK again.
        let first = try XCTUnwrap(exchange(pd, 0x60))
        XCTAssertEqual(first.code, 0x48)
        XCTAssertEqual(first.data, [1, 0])
        let second = try XCTUnwrap(exchange(pd, 0x60))
        XCTAssertEqual(second.code, 0x49)
        XCTAssertEqual(second.data, [1, 1], "input 0 the tamper switch, input 1 the door contact")
        XCTAssertEqual(exchange(pd, 0x60)?.code, 0x50, "then the read in osdp_RAW")
        XCTAssertEqual(exchange(pd, 0x60)?.code, 0x40)
        // The door closes: only the inputs changed.
        pd.update(OSDPReaderStatus(tamper: true, inputs: [true, false]))
        let third = try XCTUnwrap(exchange(pd, 0x60))
        XCTAssertEqual(third.code, 0x49)
        XCTAssertEqual(third.data, [1, 0])
        XCTAssertEqual(exchange(pd, 0x60)?.code, 0x40)
    }

    func testAnAskedForStatusIsNotSentAgainUnsolicited() throws {
        let pd = try OSDPTest.peripheral(configuration())
        pd.update(OSDPReaderStatus(powerFailure: true, inputs: [false, false]))
        XCTAssertEqual(exchange(pd, 0x64)?.data, [0, 1])
        XCTAssertEqual(exchange(pd, 0x60)?.code, 0x40, "the panel already has it")
    }

    func testInputStatusAndCapabilitiesSayTwoInputsOnlyWhenWired() throws {
        let pd = try OSDPTest.peripheral(configuration(inputs: 2))
        let r = try XCTUnwrap(exchange(pd, 0x65))
        XCTAssertEqual(r.code, 0x49)
        XCTAssertEqual(r.data, [0, 0])
        let cap = try XCTUnwrap(exchange(pd, 0x62, [0]))
        XCTAssertEqual(Array(cap.data.prefix(3)), [1, 1, 2], "contact status monitoring, 2 inputs")
        let none = try OSDPTest.peripheral(configuration(inputs: 0))
        sequence = 0
        let capNone = try XCTUnwrap(exchange(none, 0x62, [0]))
        XCTAssertFalse(stride(from: 0, to: capNone.data.count, by: 3).contains { capNone.data[$0] == 1 }, "no inputs: no function 1")
        XCTAssertEqual(exchange(none, 0x65)?.data, [], "ISTATR with no inputs")
    }

    func testManufacturerCommandReportsTheBuildIDAndRefusesTheRest() throws {
        let pd = try OSDPTest.peripheral(configuration())
        let r = try XCTUnwrap(exchange(pd, 0x80, [0x0C, 0x0B, 0x0A, 0x01]))
        XCTAssertEqual(r.code, 0x90)
        XCTAssertEqual(Array(r.data.prefix(4)), [0x0C, 0x0B, 0x0A, 0x01])
        XCTAssertEqual(String(decoding: r.data.dropFirst(4), as: UTF8.self), "scangate 0.1.0")
        XCTAssertEqual(exchange(pd, 0x80, [0x03, 0x02, 0x01, 0x01])?.data, [0x09], "another vendor's code: NAK 09")
        XCTAssertEqual(exchange(pd, 0x80, [0x0C, 0x0B, 0x0A, 0x02])?.data, [0x09], "an undefined command: NAK 09")
        XCTAssertEqual(exchange(pd, 0x80, [0x0C, 0x0B, 0x0A, 0x01, 0xFF])?.data, [0x09], "build id takes no data")
        XCTAssertEqual(exchange(pd, 0x80, [0x0C, 0x0B])?.data, [0x02], "no room for a vendor code: NAK 02")
    }

    func testKeepActiveHoldsTheLinkOnlineForTheTimeItNames() throws {
        let pd = try OSDPTest.peripheral(configuration())
        XCTAssertEqual(exchange(pd, 0x60, at: 0)?.code, 0x40)
        // 20 s (0x4E20) of silence allowed, beyond the 8 s offline limit.
        XCTAssertEqual(exchange(pd, 0xA7, [0x20, 0x4E], at: 10)?.code, 0x40)
        XCTAssertFalse(pd.tick(at: OSDPTest.at(15_000)).contains { if case .link(false, _) = $0 { return true }; return false })
        XCTAssertTrue(pd.isOnline)
        XCTAssertTrue(pd.tick(at: OSDPTest.at(20_100)).contains { if case .link(false, _) = $0 { return true }; return false },
                      "past the keep-active time the link goes offline")
    }

    func testAcuReceiveSizeDropsAReadWhoseReplyWouldNotFit() throws {
        let pd = try OSDPTest.peripheral(configuration())
        XCTAssertEqual(exchange(pd, 0x7B, [10, 0])?.data, [0x09], "a panel must receive at least 64 bytes")
        XCTAssertEqual(exchange(pd, 0x7B, [64, 0])?.code, 0x40)
        _ = pd.enqueue(.raw(seq: 7, bytes: Array(repeating: 0x41, count: 60), emittedAt: OSDPTest.t0))
        _ = pd.enqueue(.raw(seq: 8, bytes: [0x42], emittedAt: OSDPTest.t0))
        let frame = OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, code: 0x60)
        let step = try XCTUnwrap(pd.receive(frame, at: OSDPTest.t0).first)
        XCTAssertTrue(step.effects.contains { if case .readDropped(7, let why) = $0 { return why.contains("ACURXSIZE 64") }; return false }, "\(step.effects)")
        XCTAssertEqual(step.reply?[5], 0x50, "the next read fits and goes out")
    }
}

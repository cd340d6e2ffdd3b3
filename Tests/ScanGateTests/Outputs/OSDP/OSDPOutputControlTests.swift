import XCTest
@testable import Core
@testable import OSDP
import Platform

/// osdp_OUT (0x68) and osdp_OSTAT (0x66): the record parser on its own, then the PD's replies and
/// effects (OSDP 2.2 control codes 0 to 6, timer in 100 ms units, output 0 = the door relay).
final class OSDPOutputControlTests: XCTestCase {
    func parse(_ hex: String, outputs: Int = 1) throws(OSDPOutputControl.Invalid) -> [OSDPRelayCommand] {
        try OSDPOutputControl.parse(OSDPTest.bytes(hex)[...], outputs: outputs)
    }

    func why(_ hex: String, outputs: Int = 1) -> String? {
        do throws(OSDPOutputControl.Invalid) {
            _ = try parse(hex, outputs: outputs)
            return nil
        } catch {
            return error.why
        }
    }

    func testEveryControlCodeMapsToItsRelayCommand() throws {
        XCTAssertEqual(try parse("00000000"), [], "NOP")
        XCTAssertEqual(try parse("00010000"), [OSDPRelayCommand(output: 0, command: .permanent(on: false, abortTimed: true))])
        XCTAssertEqual(try parse("00020000"), [OSDPRelayCommand(output: 0, command: .permanent(on: true, abortTimed: true))])
        XCTAssertEqual(try parse("00030000"), [OSDPRelayCommand(output: 0, command: .permanent(on: false, abortTimed: false))])
        XCTAssertEqual(try parse("00040000"), [OSDPRelayCommand(output: 0, command: .permanent(on: true, abortTimed: false))])
        // Timer LSB first: 0x0102 = 258 units of 100 ms.
        XCTAssertEqual(try parse("00050201"), [OSDPRelayCommand(output: 0, command: .temporary(on: true, milliseconds: 25_800))])
        XCTAssertEqual(try parse("00061E00"), [OSDPRelayCommand(output: 0, command: .temporary(on: false, milliseconds: 3000))])
        XCTAssertEqual(try parse("0005FFFF"), [OSDPRelayCommand(output: 0, command: .temporary(on: true, milliseconds: 6_553_500))])
        // Several records, in order; NOPs left out.
        XCTAssertEqual(try parse("00020000" + "00000000" + "00050A00"), [
            OSDPRelayCommand(output: 0, command: .permanent(on: true, abortTimed: true)),
            OSDPRelayCommand(output: 0, command: .temporary(on: true, milliseconds: 1000)),
        ])
    }

    func testRecordsThePDCannotProcessAreRefusedWhole() {
        XCTAssertEqual(why("01020000"), "output 1: this reader has outputs 0 to 0")
        XCTAssertEqual(why("00020000", outputs: 0), "output 0: this reader has no outputs (no door relay configured)")
        XCTAssertEqual(why("00070000"), "output 0: control code 7 (0 to 6)")
        XCTAssertEqual(why("00FF0000"), "output 0: control code 255 (0 to 6)")
        XCTAssertEqual(why("00050000"), "output 0: a temporary state (control code 5) with a zero timer")
        XCTAssertEqual(why("00060000"), "output 0: a temporary state (control code 6) with a zero timer")
        // A good record before a bad one: nothing is applied.
        XCTAssertEqual(why("00020000" + "05020000"), "output 5: this reader has outputs 0 to 0")
        XCTAssertEqual(why(""), "0 bytes are not whole 4-byte records")
        XCTAssertEqual(why("000200"), "3 bytes are not whole 4-byte records")
    }

    func testALevelAfterTheCommandsIsWhatTheyDecide() {
        func level(_ commands: [RelayCommand], _ active: Bool) -> Bool {
            OSDPOutputControl.levelAfter(commands.map { OSDPRelayCommand(output: 0, command: $0) }, output: 0, active: active)
        }
        XCTAssertTrue(level([], true))
        XCTAssertFalse(level([], false))
        XCTAssertTrue(level([.permanent(on: true, abortTimed: true)], false))
        XCTAssertFalse(level([.permanent(on: false, abortTimed: true)], true))
        XCTAssertTrue(level([.temporary(on: true, milliseconds: 100)], false))
        XCTAssertFalse(level([.temporary(on: false, milliseconds: 100)], true))
        XCTAssertTrue(level([.temporary(on: true, milliseconds: 100), .permanent(on: false, abortTimed: false)], false),
                      "the timed state runs on")
        XCTAssertFalse(level([.temporary(on: true, milliseconds: 100), .permanent(on: false, abortTimed: true)], false))
    }

    // MARK: - The PD

    func configuration(outputs: Int) -> OSDPPeripheralConfiguration {
        var c = OSDPTest.configuration()
        c.features.outputs = outputs
        return c
    }

    func frame(_ sequence: UInt8, _ code: UInt8, _ data: [UInt8] = []) -> [UInt8] {
        OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, code: code, data: data)
    }

    func reply(_ sequence: UInt8, _ code: UInt8, _ data: [UInt8]) -> String {
        Hex.string(OSDPFrameBuilder.build(address: 0x80, sequence: sequence, crc: true, code: code, data: data))
    }

    func testOutputDrivesTheRelayAndRepliesOSTATROnceEvenWhenRetried() throws {
        let pd = try OSDPTest.peripheral(configuration(outputs: 1))
        var relayOn = false
        pd.outputLevels = { [relayOn] }
        // OSTAT: the relay is idle.
        var steps = pd.receive(frame(0, 0x66), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(0, 0x4A, [0])])
        // OUT: output 0 on for 2.5 s; the reply already says active.
        let out = frame(1, 0x68, [0, 5, 25, 0])
        steps = pd.receive(out, at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(1, 0x4A, [1])])
        XCTAssertEqual(steps.flatMap(\.effects), [.drive(OSDPRelayCommand(output: 0, command: .temporary(on: true, milliseconds: 2500)))])
        // The panel missed the reply and sends the frame again: same reply, no second drive.
        steps = pd.receive(out, at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(1, 0x4A, [1])])
        XCTAssertEqual(steps.flatMap(\.effects), [])
        relayOn = true
        steps = pd.receive(frame(2, 0x66), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(2, 0x4A, [1])])
        // Permanent off, abort timed.
        steps = pd.receive(frame(3, 0x68, [0, 1, 0, 0]), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(3, 0x4A, [0])])
        XCTAssertEqual(steps.flatMap(\.effects), [.drive(OSDPRelayCommand(output: 0, command: .permanent(on: false, abortTimed: true)))])
    }

    func testOutputsThatDoNotExistAreNAK09AndBadLengthsNAK02() throws {
        let pd = try OSDPTest.peripheral(configuration(outputs: 1))
        var steps = pd.receive(frame(0, 0x68, [1, 2, 0, 0]), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(0, 0x41, [9])])
        XCTAssertFalse(steps.flatMap(\.effects).contains { if case .drive = $0 { return true }; return false })
        steps = pd.receive(frame(1, 0x68, [0, 2, 0]), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(1, 0x41, [2])])
        steps = pd.receive(frame(2, 0x66, [0]), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(2, 0x41, [2])])

        // No door relay: no outputs at all.
        let bare = try OSDPTest.peripheral(configuration(outputs: 0))
        steps = bare.receive(frame(0, 0x68, [0, 2, 0, 0]), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(0, 0x41, [9])])
        XCTAssertFalse(steps.flatMap(\.effects).contains { if case .drive = $0 { return true }; return false })
        steps = bare.receive(frame(1, 0x66), at: OSDPTest.t0)
        XCTAssertEqual(steps.compactMap { $0.reply.map { Hex.string($0) } }, [reply(1, 0x41, [9])])
    }

    func testCapabilitiesReportTheOutputOnlyWithADoorRelay() throws {
        func capabilities(_ outputs: Int) throws -> String {
            let pd = try OSDPTest.peripheral(configuration(outputs: outputs))
            let reply = try XCTUnwrap(pd.receive(frame(0, 0x62, [0]), at: OSDPTest.t0).first?.reply)
            return Hex.string(Array(reply[6..<(reply.count - 2)]))
        }
        XCTAssertEqual(try capabilities(1), "020201" + "030100" + "040401" + "050201" + "060000" + "080100" + "090100" + "0AA005" + "100200")
        XCTAssertFalse(try capabilities(0).hasPrefix("02"), "no output control without a door relay")
    }
}

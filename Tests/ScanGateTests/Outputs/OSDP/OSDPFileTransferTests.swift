import XCTest
import Core
@testable import OSDP
import Platform

private extension OSDPFileTransfer {
    /// For the tests that are not about time: every fragment at the same instant.
    mutating func receive(_ data: [UInt8]) -> Outcome { receive(data, at: OSDPTest.t0) }
}

/// osdp_FILETRANSFER reassembly (`OSDPFileTransfer`) and its osdp_FTSTAT replies.
final class OSDPFileTransferTests: XCTestCase {
    /// FILETRANSFER data: type, total (LE32), offset (LE32), fragment size (LE16), data.
    func command(type: UInt8 = OSDPFileTransfer.configFileType, total: Int, offset: Int, _ bytes: [UInt8]) -> [UInt8] {
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        return [type] + le(total, 4) + le(offset, 4) + le(bytes.count, 2) + bytes
    }

    let text = Array("[osdp]\n# a config file sent in three fragments\n".utf8)

    func accepting() -> OSDPFileTransfer { OSDPFileTransfer { _ in nil } }

    /// The file in fragments of `size` bytes.
    func fragments(_ file: [UInt8], size: Int) -> [[UInt8]] {
        stride(from: 0, to: file.count, by: size).map { command(total: file.count, offset: $0, Array(file[$0..<min($0 + size, file.count)])) }
    }

    func testFTSTATDataLayoutIsActionDelayStatusAndMessageMaxLittleEndian() {
        XCTAssertEqual(OSDPFileTransferStatus(.proceed).data, [0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(OSDPFileTransferStatus(.processed).data, [0, 0, 0, 1, 0, 0, 0])
        XCTAssertEqual(OSDPFileTransferStatus(.abort).data, [0, 0, 0, 0xFF, 0xFF, 0, 0])
        XCTAssertEqual(OSDPFileTransferStatus(.unrecognized).data, [0, 0, 0, 0xFE, 0xFF, 0, 0])
        XCTAssertEqual(OSDPFileTransferStatus(.unacceptable).data, [0, 0, 0, 0xFD, 0xFF, 0, 0])
    }

    func testInOrderFragmentsProceedThenTheLastSaysProcessedWithTheWholeFile() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        XCTAssertEqual(parts.count, 3)
        for part in parts.dropLast() {
            let outcome = ft.receive(part)
            XCTAssertEqual(outcome.status.detail, .proceed)
            XCTAssertNil(outcome.completed, "nothing is acted on before the whole file arrived")
        }
        let last = ft.receive(parts[2])
        XCTAssertEqual(last.status.detail, .processed)
        XCTAssertEqual(last.completed, text)
        XCTAssertFalse(last.refused)
    }

    func testASingleFragmentFileCompletesAtOnce() {
        var ft = accepting()
        let outcome = ft.receive(command(total: text.count, offset: 0, text))
        XCTAssertEqual(outcome.status.detail, .processed)
        XCTAssertEqual(outcome.completed, text)
    }

    func testAnOffsetOutOfOrderAbortsAndDropsThePartialFile() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        XCTAssertEqual(ft.receive(parts[0]).status.detail, .proceed)
        let skipped = ft.receive(parts[2])
        XCTAssertEqual(skipped.status.detail, .abort)
        XCTAssertTrue(skipped.refused)
        XCTAssertNil(skipped.completed)
        XCTAssertEqual(ft.receivedBytes, 0)
        // The rest of the old transfer does not continue it.
        XCTAssertEqual(ft.receive(parts[1]).status.detail, .abort)
        XCTAssertNil(ft.receive(parts[2]).completed)
    }

    func testAFragmentWithNoTransferInProgressAborts() {
        var ft = accepting()
        XCTAssertEqual(ft.receive(command(total: 10, offset: 5, [1, 2])).status.detail, .abort)
    }

    func testAFileLargerThanTheBoundIsRefusedAtTheFirstFragment() {
        var ft = accepting()
        let outcome = ft.receive(command(total: OSDPFileTransfer.maximumSize + 1, offset: 0, [0x23]))
        XCTAssertEqual(outcome.status.detail, .unacceptable)
        XCTAssertTrue(outcome.note?.contains("\(OSDPFileTransfer.maximumSize)") ?? false, outcome.note ?? "")
        XCTAssertEqual(ft.receivedBytes, 0)
        XCTAssertEqual(ft.receive(command(total: 0, offset: 0, [])).status.detail, .unacceptable)
        XCTAssertEqual(ft.receive(command(total: Int(UInt32.max), offset: 0, [1])).status.detail, .unacceptable)
    }

    func testAnotherFileTypeIsUnrecognized() {
        var ft = accepting()
        let outcome = ft.receive(command(type: 2, total: text.count, offset: 0, text))
        XCTAssertEqual(outcome.status.detail, .unrecognized)
        XCTAssertNil(outcome.completed)
        XCTAssertTrue(outcome.note?.contains("file type 2") ?? false, outcome.note ?? "")
    }

    func testMalformedDataIsUnacceptable() {
        var ft = accepting()
        XCTAssertEqual(ft.receive([1, 2, 3]).status.detail, .unacceptable)
        var wrongSize = command(total: 10, offset: 0, [1, 2, 3])
        wrongSize[9] = 4  // FtFragmentSize says 4, 3 bytes follow
        XCTAssertEqual(ft.receive(wrongSize).status.detail, .unacceptable)
        XCTAssertEqual(ft.receive(command(total: 2, offset: 0, [1, 2, 3])).status.detail, .unacceptable, "past FtSizeTotal")
    }

    func testTheSameFragmentAgainIsHarmless() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        XCTAssertEqual(ft.receive(parts[0]).status.detail, .proceed)
        XCTAssertEqual(ft.receive(parts[1]).status.detail, .proceed)
        XCTAssertEqual(ft.receive(parts[1]).status.detail, .proceed, "a retry of the previous fragment")
        XCTAssertEqual(ft.receivedBytes, 40)
        let last = ft.receive(parts[2])
        XCTAssertEqual(last.completed, text)
        let again = ft.receive(parts[2])
        XCTAssertEqual(again.status.detail, .processed, "the last fragment again gets the same answer")
        XCTAssertNil(again.completed, "and the file is not installed twice")
    }

    func testAFragmentAtOffsetZeroRestartsTheTransfer() {
        var ft = accepting()
        let other = Array("[osdp]\n".utf8) + [UInt8](repeating: 0x23, count: 30)
        _ = ft.receive(fragments(other, size: 20)[0])
        XCTAssertEqual(ft.receivedBytes, 20)
        var completed: [UInt8]?
        for part in fragments(text, size: 20) { completed = ft.receive(part).completed ?? completed }
        XCTAssertEqual(completed, text)
    }

    func testTheCheckDecidesTheLastStatus() {
        var ft = OSDPFileTransfer { _ in (.unacceptable, "scangate.conf:1: unknown key") }
        let outcome = ft.receive(command(total: text.count, offset: 0, text))
        XCTAssertEqual(outcome.status.detail, .unacceptable)
        XCTAssertNil(outcome.completed)
        XCTAssertTrue(outcome.note?.contains("unknown key") ?? false, outcome.note ?? "")
    }

    func testBinaryContentsAreUnrecognizedWithoutAskingTheCheck() {
        var asked = false
        var ft = OSDPFileTransfer { _ in asked = true; return nil }
        XCTAssertEqual(ft.receive(command(total: 3, offset: 0, [0x41, 0, 0x42])).status.detail, .unrecognized)
        XCTAssertEqual(ft.receive(command(total: 2, offset: 0, [0xC3, 0x28])).status.detail, .unrecognized)
        XCTAssertFalse(asked)
    }

    func testWithoutACheckEveryTransferIsRefused() {
        var ft = OSDPFileTransfer()
        let outcome = ft.receive(command(total: text.count, offset: 0, text))
        XCTAssertEqual(outcome.status.detail, .abort)
        XCTAssertTrue(outcome.note?.contains("without a config file") ?? false, outcome.note ?? "")
    }

    /// Through the PD: FILETRANSFER is answered with osdp_FTSTAT, and the effect comes with the last fragment.
    func testThePeripheralAnswersFTSTATAndEmitsTheFileOnce() throws {
        let pd = try OSDPTest.peripheral()
        pd.fileTransfer = accepting()
        let parts = fragments(text, size: 30)
        var effects: [OSDPEffect] = []
        for (i, part) in parts.enumerated() {
            let frame = OSDPFrameBuilder.build(address: 0, sequence: UInt8(i), crc: true,
                                               code: OSDPCommand.fileTransfer.rawValue, data: part)
            let steps = pd.receive(frame, at: OSDPTest.at(Double(i)))
            XCTAssertEqual(steps.count, 1)
            let reply = try XCTUnwrap(steps.first?.reply)
            XCTAssertEqual(reply[5], OSDPReply.fileTransferStatus.rawValue)
            XCTAssertEqual(Array(reply[6..<13]), OSDPFileTransferStatus(i == parts.count - 1 ? .processed : .proceed).data)
            effects += steps.flatMap(\.effects)
        }
        XCTAssertEqual(effects.filter { if case .configFileReceived = $0 { return true } else { return false } },
                       [.configFileReceived(text)])
    }

    // MARK: - osdp_ABORT and the idle timeout

    func testAbortDropsThePartialTransferAndALaterFragmentAborts() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        XCTAssertEqual(ft.receive(parts[0]).status.detail, .proceed)
        let note = ft.abort()
        XCTAssertTrue(note?.contains("20 of \(text.count) bytes received") ?? false, note ?? "nil")
        XCTAssertEqual(ft.receivedBytes, 0)
        let next = ft.receive(parts[1])
        XCTAssertEqual(next.status.detail, .abort, "the transfer is gone: its next fragment has nothing to continue")
        XCTAssertNil(ft.receive(parts[2]).completed)
        XCTAssertNil(ft.abort(), "nothing in progress: nothing to say")
    }

    func testAfterAbortTheSameFileSentAgainIsANewTransfer() {
        var ft = accepting()
        let whole = command(total: text.count, offset: 0, text)
        XCTAssertEqual(ft.receive(whole).completed, text)
        XCTAssertNil(ft.abort(), "a finished transfer is not in progress")
        XCTAssertEqual(ft.receive(whole).completed, text, "not taken for a retry of the finished one")
    }

    func testAPartialTransferWithNoFragmentForTheIdleTimeoutIsDropped() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        XCTAssertEqual(ft.receive(parts[0], at: OSDPTest.t0).status.detail, .proceed)
        XCTAssertNil(ft.expire(at: OSDPTest.at(OSDPFileTransfer.idleTimeoutMs)), "exactly the timeout: kept")
        XCTAssertEqual(ft.receivedBytes, 20)
        let note = ft.expire(at: OSDPTest.at(OSDPFileTransfer.idleTimeoutMs + 1))
        XCTAssertTrue(note?.contains("20 of \(text.count) bytes received") ?? false, note ?? "nil")
        XCTAssertTrue(note?.contains("no fragment for 30 s") ?? false, note ?? "nil")
        XCTAssertEqual(ft.receivedBytes, 0)
        XCTAssertNil(ft.expire(at: OSDPTest.at(90_000)), "dropped once")
        XCTAssertEqual(ft.receive(parts[1], at: OSDPTest.at(91_000)).status.detail, .abort)
    }

    func testAFragmentAfterTheIdleTimeoutIsAbortAndSaysWhatWasDropped() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        _ = ft.receive(parts[0], at: OSDPTest.t0)
        _ = ft.receive(parts[1], at: OSDPTest.at(1000))
        let late = ft.receive(parts[2], at: OSDPTest.at(1000 + OSDPFileTransfer.idleTimeoutMs + 500))
        XCTAssertEqual(late.status.detail, .abort)
        XCTAssertNil(late.completed)
        XCTAssertTrue(late.expired?.contains("40 of \(text.count) bytes received") ?? false, late.expired ?? "nil")
        // The panel starts again from offset 0: that transfer installs.
        var completed: [UInt8]?
        for (i, part) in parts.enumerated() {
            completed = ft.receive(part, at: OSDPTest.at(40_000 + Double(i) * 1000)).completed ?? completed
        }
        XCTAssertEqual(completed, text)
    }

    func testFragmentsCloserThanTheIdleTimeoutStillInstallHoweverLongTheTransfer() {
        var ft = accepting()
        let gap = OSDPFileTransfer.idleTimeoutMs - 1000
        var completed: [UInt8]?
        for (i, part) in fragments(text, size: 10).enumerated() {
            XCTAssertNil(ft.expire(at: OSDPTest.at(Double(i) * gap)), "fragment \(i)")
            let outcome = ft.receive(part, at: OSDPTest.at(Double(i) * gap))
            XCTAssertNil(outcome.expired)
            XCTAssertFalse(outcome.refused, outcome.note ?? "")
            completed = outcome.completed ?? completed
        }
        XCTAssertEqual(completed, text, "5 fragments over 2 minutes, each within 30 s of the one before")
    }

    func testAFragmentSentAgainKeepsTheTransferAlive() {
        var ft = accepting()
        let parts = fragments(text, size: 20)
        _ = ft.receive(parts[0], at: OSDPTest.t0)
        _ = ft.receive(parts[1], at: OSDPTest.at(20_000))
        XCTAssertEqual(ft.receive(parts[1], at: OSDPTest.at(45_000)).status.detail, .proceed, "a retry")
        XCTAssertNil(ft.expire(at: OSDPTest.at(70_000)), "25 s after the retry")
        XCTAssertEqual(ft.receive(parts[2], at: OSDPTest.at(70_000)).completed, text)
    }

    /// FILETRANSFER (and ABORT) frames to the PD at address 0, sequence 1, 2, 3, 1, ... after a POLL at 0.
    final class Panel {
        let pd: OSDPPeripheral
        var sequence: UInt8 = 0
        var effects: [OSDPEffect] = []
        init(_ pd: OSDPPeripheral) {
            self.pd = pd
            _ = send(OSDPCommand.poll.rawValue, [], at: 0)
        }

        /// The reply's code and data (nil: silence).
        func send(_ code: UInt8, _ data: [UInt8], at ms: Double) -> (code: UInt8, data: [UInt8])? {
            let frame = OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, code: code, data: data)
            sequence = sequence == 3 ? 1 : sequence + 1
            let steps = pd.receive(frame, at: OSDPTest.at(ms))
            effects += steps.flatMap(\.effects)
            guard let reply = steps.first?.reply, reply.count >= 8 else { return nil }
            return (reply[5], Array(reply[6..<(reply.count - 2)]))
        }

        func fragment(_ data: [UInt8], at ms: Double) -> OSDPFileStatusDetail? {
            guard let reply = send(OSDPCommand.fileTransfer.rawValue, data, at: ms),
                  reply.code == OSDPReply.fileTransferStatus.rawValue, reply.data.count == 7 else { return nil }
            return OSDPFileStatusDetail(rawValue: Int16(bitPattern: UInt16(reply.data[3]) | UInt16(reply.data[4]) << 8))
        }

        var installed: [[UInt8]] {
            effects.compactMap { if case .configFileReceived(let file) = $0 { return file } else { return nil } }
        }
    }

    func testABORTMidTransferMakesTheNextFragmentFTSTATAbortAndInstallsNothing() throws {
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(logger: logs.logger)
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let parts = fragments(text, size: 20)
        XCTAssertEqual(panel.fragment(parts[0], at: 10), .proceed)
        let ack = panel.send(OSDPCommand.abort.rawValue, [], at: 20)
        XCTAssertEqual(ack?.code, OSDPReply.ack.rawValue, "osdp_ACK")
        XCTAssertEqual(ack?.data, [])
        XCTAssertEqual(pd.fileTransfer.receivedBytes, 0)
        XCTAssertTrue(logs.contains("20 of \(text.count) bytes received) was aborted by the panel (ABORT)"), logs.text)
        XCTAssertEqual(panel.fragment(parts[1], at: 30), .abort, "FTSTAT -1: no transfer to continue")
        XCTAssertEqual(panel.fragment(parts[2], at: 40), .abort)
        XCTAssertEqual(panel.installed, [], "the config file is not touched")
        XCTAssertEqual(panel.send(OSDPCommand.abort.rawValue, [], at: 50)?.code, OSDPReply.ack.rawValue,
                       "ABORT with nothing in progress is acknowledged too")
    }

    func testAfterABORTAFreshTransferFromOffsetZeroInstalls() throws {
        let pd = try OSDPTest.peripheral()
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let other = Array("[osdp]\n# an older file, abandoned\n".utf8)
        XCTAssertEqual(panel.fragment(fragments(other, size: 20)[0], at: 10), .proceed)
        XCTAssertEqual(panel.send(OSDPCommand.abort.rawValue, [], at: 20)?.code, OSDPReply.ack.rawValue)
        let parts = fragments(text, size: 20)
        for (i, part) in parts.enumerated() {
            XCTAssertEqual(panel.fragment(part, at: 30 + Double(i)), i == parts.count - 1 ? .processed : .proceed)
        }
        XCTAssertEqual(panel.installed, [text])
    }

    func testABORTWithDataIsNAK02AndKeepsTheTransfer() throws {
        let pd = try OSDPTest.peripheral()
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let parts = fragments(text, size: 20)
        XCTAssertEqual(panel.fragment(parts[0], at: 10), .proceed)
        let nak = panel.send(OSDPCommand.abort.rawValue, [0x00], at: 20)
        XCTAssertEqual(nak?.code, OSDPReply.nak.rawValue)
        XCTAssertEqual(nak?.data, [OSDPNak.commandLength.rawValue], "NAK 02, as for POLL or LSTAT with data")
        XCTAssertEqual(pd.fileTransfer.receivedBytes, 20, "a refused ABORT changes nothing")
        XCTAssertEqual(panel.fragment(parts[1], at: 30), .proceed)
        XCTAssertEqual(panel.fragment(parts[2], at: 40), .processed)
        XCTAssertEqual(panel.installed, [text])
    }

    func testThePDDropsAnIdlePartialTransferOnATickWithAWarning() throws {
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(logger: logs.logger)
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let parts = fragments(text, size: 20)
        XCTAssertEqual(panel.fragment(parts[0], at: 10), .proceed)
        _ = pd.tick(at: OSDPTest.at(10 + OSDPFileTransfer.idleTimeoutMs))
        XCTAssertEqual(pd.fileTransfer.receivedBytes, 20, "not yet")
        _ = pd.tick(at: OSDPTest.at(11 + OSDPFileTransfer.idleTimeoutMs))
        XCTAssertEqual(pd.fileTransfer.receivedBytes, 0)
        let warning = logs.all.filter { $0.contains("partial file transfer (20 of \(text.count) bytes received) was dropped") }
        XCTAssertEqual(warning.count, 1, logs.text)
        XCTAssertTrue(warning.first?.hasPrefix("<4>") ?? false, "a warning: \(warning)")
        XCTAssertEqual(panel.fragment(parts[1], at: 40_000), .abort, "FTSTAT -1 after the drop")
        XCTAssertEqual(panel.installed, [])
    }

    func testThePDDropsAnIdlePartialTransferWhenTheNextFragmentComesLateWithoutATick() throws {
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(logger: logs.logger)
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let parts = fragments(text, size: 20)
        XCTAssertEqual(panel.fragment(parts[0], at: 10), .proceed)
        XCTAssertEqual(panel.fragment(parts[1], at: 40_000), .abort)
        XCTAssertTrue(logs.contains("partial file transfer (20 of \(text.count) bytes received) was dropped"), logs.text)
        XCTAssertEqual(panel.installed, [])
    }

    func testThePDInstallsAFileWhoseFragmentsComeJustWithinTheIdleTimeout() throws {
        let pd = try OSDPTest.peripheral()
        pd.fileTransfer = accepting()
        let panel = Panel(pd)
        let parts = fragments(text, size: 20)
        let gap = OSDPFileTransfer.idleTimeoutMs - 1
        for (i, part) in parts.enumerated() {
            let at = 10 + Double(i) * gap
            _ = pd.tick(at: OSDPTest.at(at))
            XCTAssertEqual(panel.fragment(part, at: at), i == parts.count - 1 ? .processed : .proceed, "fragment \(i)")
        }
        XCTAssertEqual(panel.installed, [text])
    }

    /// A panel's side of the secure channel, worked out with the PD's own crypto (checked against the
    /// independent vectors in OSDPSecureChannelTests): the handshake, then commands with a MAC (SCS_15).
    struct SecurePanel {
        let pd: OSDPPeripheral
        let crypto: OSDPSecureChannelCrypto
        let keys: OSDPSessionKeys
        /// The full MAC of the PD's last reply: the IV of the next command's MAC.
        var replyMAC: [UInt8]
        var sequence: UInt8 = 2

        init(_ pd: OSDPPeripheral, key: OSDPKey, rndB: [UInt8]) throws {
            self.pd = pd
            crypto = OSDPSecureChannelCrypto(aes: try AES128())
            let rndA: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7]
            keys = try crypto.sessionKeys(scbk: key, rndA: rndA)
            let chlng = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, securityBlock: [3, OSDPSecurityBlock.challenge.rawValue, 1],
                                               code: OSDPCommand.challenge.rawValue, data: rndA)
            _ = pd.receive(chlng, at: OSDPTest.t0)
            let cryptogram = try crypto.serverCryptogram(keys, rndA: rndA, rndB: rndB)
            let scrypt = OSDPFrameBuilder.build(address: 0, sequence: 1, crc: true, securityBlock: [3, OSDPSecurityBlock.serverCryptogram.rawValue, 1],
                                                code: OSDPCommand.serverCryptogram.rawValue, data: cryptogram)
            _ = pd.receive(scrypt, at: OSDPTest.t0)
            replyMAC = try crypto.initialReplyMAC(keys, serverCryptogram: cryptogram)
        }

        /// Sends `code` with `data` in clear and a MAC (SCS_15); returns the reply (no mark), its MAC checked.
        mutating func send(_ code: UInt8, _ data: [UInt8] = [], at ms: Double) throws -> [UInt8] {
            var commandMAC: [UInt8] = []
            let (crypto, keys, iv) = (crypto, keys, replyMAC)
            let frame = OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, securityBlock: [2, OSDPSecurityBlock.commandMAC.rawValue],
                                               code: code, data: data) { message in
                commandMAC = (try? crypto.mac(keys, iv: iv, message: message)) ?? []
                return Array(commandMAC.prefix(OSDPWire.macLength))
            }
            sequence = sequence == 3 ? 1 : sequence + 1
            let reply = try XCTUnwrap(pd.receive(frame, at: OSDPTest.at(ms)).first?.reply)
            let macStart = reply.count - 2 - OSDPWire.macLength
            let full = try crypto.mac(keys, iv: commandMAC, message: Array(reply[0..<macStart]))
            XCTAssertEqual(Array(full.prefix(OSDPWire.macLength)), Array(reply[macStart..<(macStart + OSDPWire.macLength)]), "the reply's MAC")
            replyMAC = full
            return reply
        }
    }

    /// Inside the secure channel ABORT has no data, so a MAC alone (SCS_15) is enough, as for POLL: ACK with
    /// a reply MAC, and the channel stays up. With data in clear it is NAK 06 like any other command.
    func testInsideTheSecureChannelABORTWithAMACIsAcknowledgedAndWithDataInClearIsNAK06() throws {
        let key = try XCTUnwrap(OSDPKey(bytes: (0..<16).map { UInt8(0x30 + $0) }))
        let rndB: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(secure: .required, key: key), random: rndB)
        pd.fileTransfer = accepting()
        var panel = try SecurePanel(pd, key: key, rndB: rndB)
        XCTAssertTrue(pd.isSecureChannelActive)
        let ack = try panel.send(OSDPCommand.abort.rawValue, at: 10)
        // SOM, address, length (2), control, then the security block [2, SCS_16] and the reply code.
        XCTAssertEqual(Array(ack[5...7]), [2, OSDPSecurityBlock.replyMAC.rawValue, OSDPReply.ack.rawValue], OSDPTest.hex(ack))
        XCTAssertTrue(pd.isSecureChannelActive)
        let nak = try panel.send(OSDPCommand.abort.rawValue, [0], at: 20)
        XCTAssertEqual(Array(nak[5...7]), [2, OSDPSecurityBlock.replyEncrypted.rawValue, OSDPReply.nak.rawValue], OSDPTest.hex(nak))
        XCTAssertTrue(pd.isSecureChannelActive, "NAK 06 inside the channel; the channel stays up")
        // A plain ABORT while the channel is up drops it, as any plain command does.
        let plain = OSDPFrameBuilder.build(address: 0, sequence: panel.sequence, crc: true, code: OSDPCommand.abort.rawValue)
        let refused = try XCTUnwrap(pd.receive(plain, at: OSDPTest.at(30)).first?.reply)
        XCTAssertEqual(Array(refused[5...6]), [OSDPReply.nak.rawValue, OSDPNak.securityConditions.rawValue], OSDPTest.hex(refused))
        XCTAssertFalse(pd.isSecureChannelActive)
    }
}

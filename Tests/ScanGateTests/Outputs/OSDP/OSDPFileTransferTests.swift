import XCTest
import Core
@testable import OSDP

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
}

#if canImport(Glibc)
import Glibc
#endif
import XCTest
import Core
import Feedback
import Pipeline
import Platform
import Policies
import Settings
import Stdout

/// A door output that takes or refuses by a rule, recording what it was offered.
final class ScriptedDoor: DoorOutput, @unchecked Sendable {
    let name: String
    private let refuse: @Sendable (ReadEvent) -> String?
    private let offered = PosixMutex<[ReadEvent]>([])
    init(_ name: String, refuse: @escaping @Sendable (ReadEvent) -> String? = { _ in nil }) {
        self.name = name
        self.refuse = refuse
    }
    func offer(_ event: ReadEvent) -> OutputOffer {
        offered.withLock { $0.append(event) }
        return refuse(event).map { .refused(reason: $0) } ?? .taken
    }
    func close(deadline: MonotonicInstant) {}
    var events: [ReadEvent] { offered.withLock { $0 } }
}

/// A feedback device that records the requests it is asked to play.
final class RecordingFeedbackDevice: FeedbackDevice, @unchecked Sendable {
    let name = "recording"
    private let played = PosixMutex<[FeedbackRequest]>([])
    func play(_ request: FeedbackRequest) { played.withLock { $0.append(request) } }
    func waitUntilIdle(deadline: MonotonicInstant) -> Bool { true }
    func close(deadline: MonotonicInstant) {}
    var requests: [FeedbackRequest] { played.withLock { $0 } }
}

/// One read's walk: policies, door outputs (each may refuse it for itself), report outputs, feedback.
final class DispatcherTests: XCTestCase {
    func read(_ text: String, seq: UInt64 = 1) -> ReadEvent {
        ReadEvent(seq: seq, wallTimeNanoseconds: 1_796_000_000_000_000_000,
                  symbol: DecodedSymbol(symbology: .qr, data: Array(text.utf8), bounds: Rect(x: 1, y: 2, w: 3, h: 4)),
                  frame: 7, dequeuedAt: .now(), emittedAt: .now())
    }

    func hub(_ master: FeedbackSettings.Master = .local, cue: Bool = true) -> (FeedbackHub, RecordingFeedbackDevice) {
        var s = FeedbackSettings()
        s.master = master
        s.readCue = cue
        let hub = FeedbackHub(settings: s, logger: Logger(level: .error))
        let device = RecordingFeedbackDevice()
        hub.install(device, slot: "recording")
        return (hub, device)
    }

    func parse(_ line: String) throws -> JSONValue { try JSONValue.parse(line) }

    /// Wiegand cannot carry it, serial can: the read still goes to serial, the JSON line says who refused
    /// it and why, and the read is granted (it reached a door output).
    func testARefusalByOneDoorOutputDoesNotRefuseTheReadForTheOthers() throws {
        let wiegand = ScriptedDoor("wiegand") { _ in "wiegand: 99999999 does not fit 26-bit (card 0-65535)" }
        let serial = ScriptedDoor("serial")
        let report = RecordingSink()
        let (hub, device) = hub()
        let event = ReadDispatcher(doors: [wiegand, serial], reports: [report], feedback: hub).dispatch(read("99999999"))
        XCTAssertEqual(serial.events.count, 1)
        XCTAssertEqual(event.outputs, [OutputVerdict(output: "wiegand", offer: .refused(reason: "wiegand: 99999999 does not fit 26-bit (card 0-65535)")),
                                       OutputVerdict(output: "serial", offer: .taken)])
        XCTAssertEqual(report.events.first?.outputs, event.outputs, "reports see the verdicts")
        let json = try parse(EventLine.json(event))
        XCTAssertEqual(json["refused"]?["wiegand"]?.stringValue, "wiegand: 99999999 does not fit 26-bit (card 0-65535)")
        XCTAssertNil(json["refused"]?["serial"])
        XCTAssertNil(json["rejected"])
        XCTAssertEqual(device.requests, [.grant])
    }

    func testNoDoorOutputTookItPlaysDeny() throws {
        let serial = ScriptedDoor("serial") { _ in "serial: payload has control byte 0x0D at offset 2" }
        let (hub, device) = hub()
        let event = ReadDispatcher(doors: [serial], feedback: hub).dispatch(read("12\r34"))
        XCTAssertTrue(event.verdict.isAccepted, "the credential itself is fine")
        XCTAssertFalse(event.reachedADoorOutput)
        XCTAssertEqual(device.requests, [.deny])
        XCTAssertEqual(try parse(EventLine.json(event))["refused"]?["serial"]?.stringValue,
                       "serial: payload has control byte 0x0D at offset 2")
    }

    func testAPolicyRefusalReachesNoDoorOutput() throws {
        var filter = FilterSettings()
        filter.characters = .digits
        let serial = ScriptedDoor("serial")
        let report = RecordingSink()
        let (hub, device) = hub()
        let event = ReadDispatcher(policies: [try PayloadFilter(settings: filter)], doors: [serial], reports: [report],
                                   feedback: hub).dispatch(read("ABC"))
        XCTAssertEqual(serial.events.count, 0, "a filter applies to every output")
        XCTAssertEqual(report.events.count, 1, "but the read is still reported")
        XCTAssertEqual(event.verdict, .rejected(reason: "payload has characters other than digits (allowed-chars digits)"))
        XCTAssertEqual(device.requests, [.deny])
    }

    func testWithoutDoorOutputsAnAcceptedReadIsGranted() {
        let (hub, device) = hub()
        ReadDispatcher(feedback: hub).dispatch(read("HELLO"))
        XCTAssertEqual(device.requests, [.grant])
    }

    /// `feedback = controller`: a read plays only the read cue (or nothing with the cue off); the
    /// controller's answer decides. A read no door output took is still denied at once: no answer will come.
    func testControllerMasterPlaysTheReadCueOnly() {
        let serial = ScriptedDoor("serial") { e in e.symbol.data == Array("BAD\r".utf8) ? "serial: unsafe" : nil }
        let (hub, device) = hub(.controller)
        let dispatcher = ReadDispatcher(doors: [serial], feedback: hub)
        dispatcher.dispatch(read("GOOD"))
        dispatcher.dispatch(read("BAD\r"))
        XCTAssertEqual(device.requests, [.readCue, .deny])
        hub.play(.grant, origin: "serial")
        XCTAssertEqual(device.requests, [.readCue, .deny, .grant], "the controller's grant plays")

        let (quiet, silent) = self.hub(.controller, cue: false)
        ReadDispatcher(doors: [serial], feedback: quiet).dispatch(read("GOOD"))
        XCTAssertEqual(silent.requests, [], "feedback-read-cue off: nothing until the controller answers")
    }

    /// A door output sends `doorData`, the JSON line shows the pass's number and never the token.
    func testCredentialInTheJSONLineWithoutTheToken() throws {
        var event = read("eyJhbGciOiJFZERTQSIsImtpZCI6InNpdGUifQ.eyJzdWIiOiI0NzExIn0.c2ln")
        event.credential = CredentialInfo(format: "jwt", number: "4711", keyID: "site", tokenID: "p-1", expiresAt: 1_796_000_300)
        event.doorData = Array("4711".utf8)
        let json = try parse(EventLine.json(event))
        XCTAssertEqual(json["credential"], try parse(#"{"format":"jwt","number":"4711","kid":"site","jti":"p-1","exp":1796000300}"#))
        XCTAssertEqual(json["data"]?.stringValue, String(decoding: event.symbol.data, as: UTF8.self),
                       "stdout is the record of what was scanned")
    }

    /// A controller that can tell it is away (an OSDP panel that stopped polling) makes the status
    /// `controller offline` while scanning; the capture side's states win over it.
    func testStatusBoardCombinesTheCameraAndTheControllerLinks() {
        let sink = RecordingSink()
        let board = StatusBoard(logger: Logger(level: .error), observers: [sink])
        board.setCapture(.scanning)
        board.controllerLink("osdp", online: false, detail: "no poll for 8 s")
        board.setCapture(.cameraLost)
        board.setCapture(.scanning)
        board.controllerLink("osdp", online: true, detail: "polled by address 0")
        board.controllerLink("osdp", online: true, detail: "again")
        board.setCapture(.paused)
        XCTAssertEqual(sink.statuses, [.scanning, .controllerOffline, .cameraLost, .controllerOffline, .scanning, .paused])
    }

    /// Stdout writes on its own thread from a bounded queue: a reader that never reads costs lines (counted
    /// and logged), never a blocked caller.
    func testStdoutThatIsNotReadDropsLinesButNeverBlocksTheCaller() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let log = LogCapture()
        var settings = OutputSettings()
        settings.format = .json
        let stdout = StdoutOutput(settings: settings, logger: log.logger, fd: FileDescriptor(rawValue: fds[1]), capacity: 16)
        let total = 2000
        let returned = DispatchSemaphore(value: 0)
        let events = (1...total).map { read(String(repeating: "X", count: 200), seq: UInt64($0)) }
        DispatchQueue.global().async {
            for e in events { stdout.report(e) }
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 30), .success, "report() waited for the pipe")
        XCTAssertGreaterThan(stdout.droppedLines, 0)
        XCTAssertTrue(log.all.contains { $0.hasPrefix("<4>stdout: not being read;") }, "\(log.all)")
        XCTAssertEqual(stdout.health.state, .degraded)
        stdout.close(deadline: .now().adding(milliseconds: 200))
        XCTAssertTrue(log.all.contains { $0.contains("not written at exit: stdout is not being read") }, "\(log.all)")

        // The reader comes back: what waited is written whole, then the writer ends.
        let collected = PosixMutex<[UInt8]>([])
        let readerDone = DispatchSemaphore(value: 0)
        let readEnd = fds[0]
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                collected.withLock { $0 += buffer[0..<n] }
            }
            readerDone.signal()
        }
        XCTAssertTrue(waitUntil(20) { stdout.health.sent + stdout.droppedLines == UInt64(total) }, "every line written or counted")
        close(fds[1])
        XCTAssertEqual(readerDone.wait(timeout: .now() + 10), .success)
        close(fds[0])
        let lines = String(decoding: collected.withLock { $0 }, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(UInt64(lines.count), stdout.health.sent)
        for line in lines { XCTAssertNoThrow(try parse(String(line)), "a whole JSON line") }
    }

    /// The panel holds its beeper input low before (or while) the buzzer device is rebuilt: the device
    /// installed afterwards plays the held tone and the permanent LED; a released input is not replayed.
    func testADeviceInstalledLaterPlaysWhatTheControllerHolds() {
        let hub = FeedbackHub(settings: FeedbackSettings(), logger: Logger(level: .error))
        let tone = ToneCommand(onMs: 1000, offMs: 0, duration: .untilReplaced)
        let green = LEDCommand(temporary: .cancel, permanent: .steady(.green))
        hub.play(.command(FeedbackCommand(tone: tone)), origin: "wiegand")
        hub.play(.command(FeedbackCommand(led: green)), origin: "wiegand")
        hub.play(.command(FeedbackCommand(tone: ToneCommand(onMs: 100, offMs: 100, duration: .cycles(2)))), origin: "osdp")
        hub.play(.command(FeedbackCommand(tone: tone)), origin: "wiegand")
        let late = RecordingFeedbackDevice()
        hub.install(late, slot: "gpio")
        XCTAssertEqual(late.requests, [.command(FeedbackCommand(led: LEDCommand(permanent: .steady(.green)), tone: tone))])

        hub.play(.command(FeedbackCommand(tone: .silence)), origin: "wiegand")
        hub.play(.command(FeedbackCommand(led: LEDCommand(permanent: .steady(.off)))), origin: "wiegand")
        let rebuilt = RecordingFeedbackDevice()
        hub.install(rebuilt, slot: "gpio")
        XCTAssertEqual(rebuilt.requests, [], "nothing held: a new device starts quiet and dark")

        hub.play(.command(FeedbackCommand(tone: ToneCommand(onMs: 200, offMs: 0, duration: .cycles(1)))), origin: "osdp")
        XCTAssertEqual(hub.held, FeedbackCommand(), "a bounded tone is not held")
    }
}

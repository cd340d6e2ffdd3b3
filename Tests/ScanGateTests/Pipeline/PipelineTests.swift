import XCTest
import Core
import Debounce
import Decoding
import Pipeline
import Platform
import Settings

/// A scripted in-memory source: frame i shows `codes(i)`; optional failures at given frames.
final class ScriptedSource: FrameSource, @unchecked Sendable {
    let name = "scripted"
    let isLive: Bool
    let isReconnectable: Bool
    let frames: Int
    /// Frame index → error thrown instead of that frame (once).
    var failures: [Int: CaptureError]
    /// How many open() calls fail before one succeeds after a loss.
    var failingOpens: Int
    private(set) var opens = 0
    private(set) var closes = 0
    private var next = 0

    init(frames: Int, live: Bool = false, reconnectable: Bool = false, failures: [Int: CaptureError] = [:], failingOpens: Int = 0) {
        self.frames = frames
        self.isLive = live
        self.isReconnectable = reconnectable
        self.failures = failures
        self.failingOpens = failingOpens
    }

    func open() throws {
        opens += 1
        if opens > 1 && failingOpens > 0 {
            failingOpens -= 1
            throw CaptureError.deviceLost(device: name, reason: "still gone")
        }
    }

    func nextFrame(until stop: StopToken) throws -> Frame? {
        if let e = failures.removeValue(forKey: next) { throw e }
        guard next < frames else { return nil }
        defer { next += 1 }
        // The frame's first byte carries its index for the fake decoder.
        var luma = [UInt8](repeating: 0, count: 16)
        luma[0] = UInt8(truncatingIfNeeded: next)
        luma[1] = UInt8(truncatingIfNeeded: next >> 8)
        return Frame(width: 4, height: 4, sequence: UInt64(next), captureTime: Frame.mediaTime(sequence: UInt64(next), fps: 10), luma: luma)
    }

    func close() { closes += 1 }
}

/// Decodes by script: frame index → payloads in view.
final class ScriptedDecoder: Decoder {
    let script: @Sendable (Int) -> [String]
    init(_ script: @escaping @Sendable (Int) -> [String]) { self.script = script }
    func decode(_ frame: Frame) -> [DecodedSymbol] {
        let i = Int(frame.luma[0]) | Int(frame.luma[1]) << 8
        return script(i).map { DecodedSymbol(symbology: .qr, data: Array($0.utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)) }
    }
}

/// A report output that records what it is given, and the daemon's status.
final class RecordingSink: ReportOutput, StatusObserver, @unchecked Sendable {
    let name = "recording"
    private let lock = PosixMutex<([ReadEvent], [DaemonStatus], Bool)>(([], [], false))
    func report(_ event: ReadEvent) { lock.withLock { $0.0.append(event) } }
    func statusChanged(_ status: DaemonStatus) { lock.withLock { $0.1.append(status) } }
    func close(deadline: MonotonicInstant) { lock.withLock { $0.2 = true } }
    var events: [ReadEvent] { lock.withLock { $0.0 } }
    var statuses: [DaemonStatus] { lock.withLock { $0.1 } }
    var closed: Bool { lock.withLock { $0.2 } }
    var payloads: [String] { events.map { String(decoding: $0.symbol.data, as: UTF8.self) } }
}

struct RejectPayload: ReadPolicy {
    let bad: String
    func judge(_ event: inout ReadEvent) {
        if String(decoding: event.symbol.data, as: UTF8.self) == bad { event.verdict = .rejected(reason: "not allowed") }
    }
}

final class PipelineTests: XCTestCase {
    func make(_ source: ScriptedSource, _ script: @escaping @Sendable (Int) -> [String], sink: RecordingSink,
              policies: [any ReadPolicy] = [], options: Pipeline.Options = Pipeline.Options()) -> Pipeline {
        var o = options
        o.reconnectInitialMs = 1
        o.reconnectMaxMs = 5
        let logger = Logger(level: .error)
        return Pipeline(source: source, decoder: ScriptedDecoder(script), debouncer: Debouncer(settings: DebounceSettings()),
                        dispatcher: ReadDispatcher(policies: policies, reports: [sink]),
                        status: StatusBoard(logger: logger, observers: [sink]), logger: logger, options: o)
    }

    func testEventsComeOutOnceInOrderWithFrameNumbersAndSeq() {
        let sink = RecordingSink()
        let p = make(ScriptedSource(frames: 100), { i in
            switch i {
            case 5..<40: return ["A"]
            case 50..<60: return ["B"]
            case 80..<90: return ["A"]
            default: return []
            }
        }, sink: sink)
        XCTAssertEqual(p.run(), .finished)
        XCTAssertEqual(sink.payloads, ["A", "B", "A"])
        XCTAssertEqual(sink.events.map(\.frame), [5, 50, 80])
        XCTAssertEqual(sink.events.map(\.seq), [1, 2, 3])
        XCTAssertFalse(sink.closed, "outputs stay open when the source ends: the daemon owns them")
        XCTAssertEqual(p.stats.decoded, 100, "--fast drops nothing")
        XCTAssertEqual(p.droppedFrames, 0)
    }

    func testOneshotStopsAfterFirstAcceptedCode() {
        let sink = RecordingSink()
        var o = Pipeline.Options()
        o.oneshot = true
        let p = make(ScriptedSource(frames: 1000), { i in i >= 10 ? ["A", "B"] : [] }, sink: sink, options: o)
        XCTAssertEqual(p.run(), .finished)
        XCTAssertEqual(sink.payloads, ["A"])
    }

    func testMaxFramesStopsCapture() {
        let sink = RecordingSink()
        var o = Pipeline.Options()
        o.maxFrames = 25
        let p = make(ScriptedSource(frames: 1000), { _ in [] }, sink: sink, options: o)
        XCTAssertEqual(p.run(), .finished)
        XCTAssertEqual(p.stats.captured, 25)
    }

    func testRejectedCodeReachesSinksAsRejected() {
        let sink = RecordingSink()
        let p = make(ScriptedSource(frames: 30), { i in i < 10 ? ["EVIL"] : ["GOOD"] }, sink: sink,
                     policies: [RejectPayload(bad: "EVIL")])
        XCTAssertEqual(p.run(), .finished)
        XCTAssertEqual(sink.events.map(\.verdict), [.rejected(reason: "not allowed"), .accepted])
        XCTAssertEqual(p.stats.rejected, 1)
    }

    func testLostCameraIsReopenedAndScanningResumes() {
        let sink = RecordingSink()
        let source = ScriptedSource(frames: 60, reconnectable: true,
                                    failures: [20: .deviceLost(device: "cam", reason: "ENODEV")], failingOpens: 3)
        let p = make(source, { i in i >= 30 ? ["AFTER"] : (i < 10 ? ["BEFORE"] : []) }, sink: sink)
        XCTAssertEqual(p.run(), .finished)
        XCTAssertEqual(sink.payloads, ["BEFORE", "AFTER"])
        XCTAssertEqual(source.opens, 5, "one open, three failed reopens, one that worked")
        XCTAssertEqual(sink.statuses, [.scanning, .cameraLost, .scanning])
        XCTAssertEqual(p.stats.cameraLosses, 1)
    }

    func testTimeoutOnNonReconnectableSourceFails() {
        let sink = RecordingSink()
        let p = make(ScriptedSource(frames: 10, failures: [3: .timeout(device: "x", milliseconds: 5)]), { _ in [] }, sink: sink)
        if case .failed = p.run() {} else { XCTFail("expected failure") }
    }

    func testBadInputEndsWithBadInputOutcome() {
        let sink = RecordingSink()
        let p = make(ScriptedSource(frames: 10, failures: [3: .badInput("clip.y4m: truncated at frame 3")]), { _ in [] }, sink: sink)
        XCTAssertEqual(p.run(), .badInput("clip.y4m: truncated at frame 3"))
    }

    func testStopFromAnotherThreadEndsAnEndlessSource() {
        let sink = RecordingSink()
        let source = ScriptedSource(frames: Int.max, live: true)
        let p = make(source, { _ in [] }, sink: sink)
        let done = expectation(description: "run returns")
        DispatchQueue.global().async {
            XCTAssertEqual(p.run(), .finished)
            done.fulfill()
        }
        // Wait until frames flow, then stop.
        waitUntil(10) { p.stats.captured >= 100 }
        p.stop()
        wait(for: [done], timeout: 10)
        XCTAssertFalse(sink.closed)
    }
}

import Dispatch
import Synchronization
import XCTest
@testable import Core
import Debounce
import Decoding
import Feedback
import GPIO
import MemoryGPIO
import Pipeline
import Platform
import Service
import Settings

/// A camera the test can unplug and plug back in: while `absent`, frames fail with ENODEV and opens
/// fail; frame i shows the codes of `script(i)` (through ScriptedDecoder's first-byte convention).
final class UnpluggableSource: FrameSource, @unchecked Sendable {
    let name = "unpluggable"
    let isLive = true
    let isReconnectable = true
    let absent = Atomic<Bool>(false)
    let opens = Atomic<Int>(0)
    private var next = 0
    let limit: Int

    init(frames: Int) { limit = frames }

    func open() throws {
        opens.add(1, ordering: .relaxed)
        if absent.load(ordering: .relaxed) { throw CaptureError.deviceLost(device: name, reason: "No such device (ENODEV)") }
    }

    func nextFrame(until stop: StopToken) throws -> Frame? {
        if absent.load(ordering: .relaxed) { throw CaptureError.deviceLost(device: name, reason: "No such device (ENODEV)") }
        guard next < limit else { return nil }
        sleepThread(milliseconds: 2)   // a live camera's pace
        var luma = [UInt8](repeating: 0, count: 16)
        luma[0] = UInt8(truncatingIfNeeded: next)
        luma[1] = UInt8(truncatingIfNeeded: next >> 8)
        defer { next += 1 }
        return Frame(width: 4, height: 4, sequence: UInt64(next), captureTime: Frame.mediaTime(sequence: UInt64(next), fps: 10), luma: luma)
    }

    func close() {}
}

final class FaultInjectionTests: XCTestCase {
    /// The camera vanishes: "camera lost" is logged, the status LED blinks fast, no code is lost or
    /// repeated; when it returns, scanning resumes without a restart.
    func testCameraLossIsLoggedShownOnTheStatusLEDAndScanningResumes() throws {
        let source = UnpluggableSource(frames: 100_000)
        let gpiod = MemoryGpiod.pi5()
        var gs = GPIOSettings()
        gs.chip = "pinctrl-rp1"
        gs.lines = [.status: .name("GPIO24"), .green: .name("GPIO22")]
        let log = LogCapture()
        let logger = log.logger
        let gpio = try XCTUnwrap(GPIOFeedback.make(settings: gs, logger: logger, calls: gpiod, clock: SystemFeedbackClock()))
        let sink = RecordingSink()
        var options = Pipeline.Options()
        options.reconnectInitialMs = 20
        options.reconnectMaxMs = 50
        let hub = FeedbackHub(settings: FeedbackSettings(), logger: logger)
        hub.install(gpio, slot: "gpio")
        let pipeline = Pipeline(source: source, decoder: ScriptedDecoder { i in
            i < 50 ? ["BEFORE"] : ["AFTER"]
        }, debouncer: Debouncer(settings: DebounceSettings()),
        dispatcher: ReadDispatcher(reports: [sink], feedback: hub),
        status: StatusBoard(logger: logger, observers: [hub, sink]), logger: logger, options: options)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { _ = pipeline.run(); done.signal() }

        XCTAssertTrue(waitUntil(20) { sink.payloads == ["BEFORE"] })
        source.absent.store(true, ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { pipeline.currentCapture == .cameraLost })
        // The status LED (GPIO24) blinks fast: several on/off changes while the camera is away.
        let statusChanges = { gpiod.sets.filter { $0.offset == 24 }.count }
        let before = statusChanges()
        XCTAssertTrue(waitUntil(20) { statusChanges() >= before + 4 }, "status LED blinks while the camera is lost")
        XCTAssertTrue(log.all.contains { $0.hasPrefix("<3>") && $0.contains("camera lost") }, "\(log.all)")
        let opensDuringLoss = source.opens.load(ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { source.opens.load(ordering: .relaxed) >= opensDuringLoss + 2 }, "it keeps retrying")

        // Plugged back in, with the other code in view.
        source.absent.store(false, ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { pipeline.currentCapture == .scanning })
        XCTAssertTrue(waitUntil(20) { sink.payloads.count >= 2 })
        pipeline.stopForSignal()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(sink.payloads, ["BEFORE", "AFTER"], "each code reported exactly once across the outage")
        XCTAssertTrue(log.all.contains { $0.contains("camera back") })
        hub.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(gpiod.state.withLock { s in s.lines.values.filter { $0.value != 0 }.count }, 0, "lines inactive after stop")
    }

    /// A decoder that hangs: the watchdog stops being fed, so systemd would restart the service; when
    /// decoding goes on again, so do the pings.
    func testHungDecoderStopsWatchdogPings() throws {
        let calls = RecordingSystemdCalls()
        let notifier = ServiceNotifier(calls: calls, logger: Logger(level: .error))
        let watchdog = Watchdog(intervalMicroseconds: 2_000_000, notifier: notifier, logger: Logger(level: .error))
        let hang = DispatchSemaphore(value: 0)
        let hanging = Atomic<Bool>(false)
        let decoded = Atomic<Int>(0)
        let decodeCalls = Atomic<Int>(0)
        let decoder = ScriptedDecoder { _ in
            // Hang on the 20th frame decoded, counted here: a live source drops frames while the decoder
            // is busy, so a given frame number (say 200) may never reach it, or come after few decodes.
            if decodeCalls.add(1, ordering: .relaxed).newValue == 20 {
                hanging.store(true, ordering: .relaxed)
                hang.wait()
                hanging.store(false, ordering: .relaxed)
            }
            return []
        }
        // Enough frames that the source never runs dry during the test (it ends with stopForSignal).
        let source = ScriptedSource(frames: 100_000_000, live: true)
        let pipeline = Pipeline(source: source, decoder: decoder, debouncer: Debouncer(settings: DebounceSettings()),
                                dispatcher: ReadDispatcher(),
                                status: StatusBoard(logger: Logger(level: .error), observers: [watchdog]),
                                logger: Logger(level: .error),
                                onFrameDecoded: { _, _ in decoded.add(1, ordering: .relaxed); watchdog.progress() })
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { _ = pipeline.run(); done.signal() }
        let pings = { calls.messages.filter { $0 == "WATCHDOG=1" }.count }

        XCTAssertTrue(waitUntil(20) { decoded.load(ordering: .relaxed) >= 10 })
        watchdog.tick()
        notifier.flush()
        XCTAssertEqual(pings(), 1, "fed while frames are decoded")

        XCTAssertTrue(waitUntil(20) { hanging.load(ordering: .relaxed) })
        watchdog.tick()   // may still see the frames decoded before the hang
        watchdog.tick()
        watchdog.tick()
        notifier.flush()
        let whileHung = pings()
        XCTAssertLessThanOrEqual(whileHung, 2, "no pings while the decoder hangs")
        watchdog.tick()
        notifier.flush()
        XCTAssertEqual(pings(), whileHung, "still none")

        hang.signal()
        let after = decoded.load(ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { decoded.load(ordering: .relaxed) > after + 5 })
        watchdog.tick()
        notifier.flush()
        XCTAssertEqual(pings(), whileHung + 1, "pings resume with decoding")
        pipeline.stopForSignal()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
    }

    /// An output that fails (its device is gone) does not stop the others: every code still reaches
    /// stdout exactly once.
    func testAFailingOutputDoesNotCostTheOthersAnEvent() {
        final class BrokenDoor: DoorOutput, @unchecked Sendable {
            let name = "broken"
            let calls = Atomic<Int>(0)
            func offer(_ event: ReadEvent) -> OutputOffer {   // takes everything and drops it
                calls.add(1, ordering: .relaxed)
                return .taken
            }
            func close(deadline: MonotonicInstant) {}
        }
        let broken = BrokenDoor()
        let sink = RecordingSink()
        let pipeline = Pipeline(source: ScriptedSource(frames: 200), decoder: ScriptedDecoder { i in
            i % 40 < 10 ? ["CODE-\(i / 40)"] : []
        }, debouncer: Debouncer(settings: DebounceSettings()),
        dispatcher: ReadDispatcher(doors: [broken], reports: [sink]), logger: Logger(level: .error))
        XCTAssertEqual(pipeline.run(), .finished)
        XCTAssertEqual(sink.payloads, (0..<5).map { "CODE-\($0)" })
        XCTAssertEqual(broken.calls.load(ordering: .relaxed), 5)
    }
}

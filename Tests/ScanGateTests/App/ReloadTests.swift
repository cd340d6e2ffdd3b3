#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import Camera
import Core
import Debounce
import Pipeline
import Platform
import Settings

/// SIGHUP without a restart: a camera kept open across the reload keeps scanning (the bug where the
/// reused V4L2 camera still carried the first run's stop request and the daemon exited), and an output
/// whose settings did not change keeps its port.
final class ReloadTests: XCTestCase {
    /// Through the scripted V4L2 device: run 1 stops for a reload with the camera left open; run 2 gets the
    /// same camera, streams on without reopening it, and reports the next code once.
    func testAV4L2CameraKeptOpenAcrossAReloadKeepsStreaming() throws {
        let width = 16, height = 4
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: width, height: height)])])
        var settings = CaptureSettings()
        settings.width = width
        settings.height = height
        settings.frameTimeoutMs = 5000
        let logs = LogCapture()
        let camera = V4L2Camera(device: "/dev/video0", settings: settings, logger: logs.logger, calls: fake)
        // Frame luma[0] is the code the scripted decoder sees: 1 = "A", 2 = "B", 0 = nothing.
        let decoder = ScriptedDecoder { i in i == 1 ? ["A"] : (i == 2 ? ["B"] : []) }
        func frame(_ code: UInt8) -> [UInt8] {
            var luma = [UInt8](repeating: 0, count: width * height)
            luma[0] = code
            return luma
        }
        // The "camera" shows `code` in every frame; the fake produces a frame at each poll, on the capture
        // thread (the fake is not thread-safe, so the test never touches it while a run is going).
        let code = Atomic<UInt8>(0)
        fake.onPoll = { device in _ = device.deliver(frame(code.load(ordering: .relaxed))) }
        let sink = RecordingSink()
        let logger = logs.logger
        let status = StatusBoard(logger: logger, observers: [sink])

        let first = Pipeline(source: camera, decoder: decoder, debouncer: Debouncer(settings: DebounceSettings()),
                             dispatcher: ReadDispatcher(reports: [sink]), status: status, logger: logger)
        let firstDone = DispatchSemaphore(value: 0)
        let firstOutcome = PosixMutex<Pipeline.Outcome?>(nil)
        DispatchQueue.global().async {
            let o = first.run()
            firstOutcome.withLock { $0 = o }
            firstDone.signal()
        }
        code.store(1, ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { sink.payloads == ["A"] }, "\(logs.all)")
        code.store(0, ordering: .relaxed)
        first.stopForReload()
        XCTAssertEqual(firstDone.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(firstOutcome.withLock { $0 }, .finished)
        XCTAssertTrue(first.sourceLeftOpen, "the camera is handed on, not closed")
        XCTAssertTrue(fake.streaming)
        let opensBefore = fake.log.filter { $0 == "STREAMON" }.count

        var options = Pipeline.Options()
        options.sourceAlreadyOpen = true
        options.firstSeq = first.carryOver.nextSeq
        let second = Pipeline(source: camera, decoder: decoder, debouncer: first.carryOver.debouncer,
                              dispatcher: ReadDispatcher(reports: [sink]), status: status, logger: logger,
                              options: options)
        let secondDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = second.run()
            secondDone.signal()
        }
        XCTAssertTrue(waitUntil(20) { second.stats.captured >= 3 }, "run 2 captures frames: \(logs.all)")
        XCTAssertEqual(secondDone.wait(timeout: .now()), .timedOut, "run 2 is still running")
        code.store(2, ordering: .relaxed)
        XCTAssertTrue(waitUntil(20) { sink.payloads == ["A", "B"] }, "\(logs.all)")
        let captured = second.stats.captured
        XCTAssertTrue(waitUntil(20) { second.stats.captured >= captured + 20 }, "B stays in view for many frames")
        second.stopForSignal()
        XCTAssertEqual(secondDone.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(sink.payloads, ["A", "B"], "the code after the reload is reported once")
        XCTAssertEqual(sink.events.map(\.seq), [1, 2], "numbering continues across the reload")
        XCTAssertEqual(fake.log.filter { $0 == "STREAMON" }.count, opensBefore, "the stream was not reopened: \(logs.all)")
        camera.close()
    }

    /// `scangate run --config FILE` with a serial port: a reload that changes only the debounce settings
    /// keeps the same descriptor on the port, and every code before and after it is on the line once.
    func testSerialPortStaysOpenAcrossAReloadThatChangedOnlyTheDebounce() throws {
        let pty = try PseudoTerminal()
        let dir = try TestFiles.temporaryDirectory()
        let scenario = dir + "/pulse.scenario"
        // A code in view for 0.25 s of every second.
        try TestFiles.write("size 320x240\nfps 20\nframes 20\nloop\ncode qr \"R\" frames 0-4 module 3\n", to: scenario)
        let conf = dir + "/scangate.conf"
        func config(holdOff: Int) -> String {
            "[camera]\ncamera = sim:\(scenario)\n[debounce]\nhold-off-ms = \(holdOff)\n[serial]\nserial = \(pty.name)\n"
        }
        try TestFiles.write(config(holdOff: 300), to: conf)
        let daemon = try DaemonUnderTest(["run", "--config", conf])
        defer { daemon.stop() }

        XCTAssertTrue(waitUntil(20) { daemon.stdout.count >= 2 }, "codes before the reload: \(daemon.stderr)")
        let before = daemon.descriptors(linkingTo: pty.name)
        XCTAssertEqual(before.count, 1, "one descriptor on the port: \(before)")

        try TestFiles.write(config(holdOff: 400), to: conf)
        let atReload = daemon.stdout.count
        daemon.signal(SIGHUP)
        XCTAssertTrue(waitUntil(20) { daemon.stderr.contains { $0.contains("camera settings unchanged: the stream stays open") } },
                      "\(daemon.stderr)")
        XCTAssertTrue(waitUntil(20) { daemon.stdout.count >= atReload + 2 }, "codes after the reload: \(daemon.stderr)")
        XCTAssertEqual(daemon.descriptors(linkingTo: pty.name), before, "the same descriptor: the port was never reopened")
        XCTAssertEqual(daemon.stderr.filter { $0.contains("serial: \(pty.name) 9600 8N1 plain open") }.count, 1,
                       "opened once: \(daemon.stderr)")
        XCTAssertFalse(daemon.stderr.contains { $0.contains("serial: settings changed") })

        XCTAssertEqual(daemon.stop(), 0, daemon.stderr.suffix(60).joined(separator: "\n"))
        let events = daemon.stdout.filter { $0.contains("\"data\":\"R\"") }.count
        let frames = pty.drain().split(separator: 0x0A).filter { $0.elementsEqual(Array("R\r".utf8)) }.count
        XCTAssertGreaterThanOrEqual(events, 4)
        XCTAssertEqual(frames, events, "every code reported on stdout is on the line, once: nothing lost at the reload")
    }
}

/// `scangate` as a child process with its output lines collected as they come, and a way to find its
/// descriptors.
final class DaemonUnderTest: @unchecked Sendable {
    let process = Process()
    private let out = DaemonSignalTests.Lines()
    private let err = DaemonSignalTests.Lines()
    private let done = DispatchSemaphore(value: 0)
    private let finished = PosixMutex<Int32?>(nil)

    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let o = Pipe(), e = Pipe()
        process.standardOutput = o
        process.standardError = e
        process.standardInput = FileHandle.nullDevice
        out.attach(o.fileHandleForReading)
        err.attach(e.fileHandleForReading)
        process.terminationHandler = { [done] _ in done.signal() }
        try process.run()
    }

    var stdout: [String] { out.all }
    var stderr: [String] { err.all }
    var pid: Int32 { process.processIdentifier }

    func signal(_ sig: Int32) { kill(pid, sig) }

    /// The descriptor numbers of the child that point at `path` (from /proc/PID/fd).
    func descriptors(linkingTo path: String) -> [Int] {
        let dir = "/proc/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        return entries.compactMap { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + name)) == path ? Int(name) : nil
        }.sorted()
    }

    /// Waits for the child to exit on its own; its status, or nil after `seconds`.
    func waitForExit(seconds: Double) -> Int32? {
        if let status = finished.withLock({ $0 }) { return status }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        // The exit can be seen before the last lines are read: wait for end of file on both pipes too.
        _ = out.ended.wait(timeout: .now() + 5)
        _ = err.ended.wait(timeout: .now() + 5)
        let status = process.terminationStatus
        finished.withLock { $0 = status }
        return status
    }

    /// SIGTERM, then the exit status (SIGKILL after 10 s).
    @discardableResult
    func stop() -> Int32 {
        if let status = finished.withLock({ $0 }) { return status }
        if process.isRunning { signal(SIGTERM) }
        if let status = waitForExit(seconds: 10) { return status }
        kill(pid, SIGKILL)
        return waitForExit(seconds: 5) ?? -1
    }
}

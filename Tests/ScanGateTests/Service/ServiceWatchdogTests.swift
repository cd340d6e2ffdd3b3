import Core
import Foundation
import Platform
import Service
import XCTest

/// The systemd watchdog: WATCHDOG=1 at half of WATCHDOG_USEC, only while decoding makes progress.
final class ServiceWatchdogTests: XCTestCase {
    private var socket: ServiceNotifySocket!
    private let logger = Logger(level: .error, sink: { _ in })

    override func setUpWithError() throws { socket = try ServiceNotifySocket() }
    override func tearDown() { socket.close() }

    /// Waits (with a deadline) until the watchdog has ticked `count` more times.
    private func waitForTicks(_ watchdog: Watchdog, _ count: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        let target = watchdog.ticks + count
        waitUntil(20, failure: "watchdog did not tick", file: file, line: line) { watchdog.ticks >= target }
    }

    func testWatchdogIsOffWithoutWatchdogUsecOrForAnotherProcess() {
        let notifier = ServiceNotifier(logger: logger)
        XCTAssertNil(Watchdog.make(notifier: notifier, logger: logger))
        setenv("WATCHDOG_USEC", "2000000", 1)
        setenv("WATCHDOG_PID", "1", 1)
        XCTAssertNil(Watchdog.make(notifier: notifier, logger: logger), "WATCHDOG_PID names another process")
        setenv("WATCHDOG_PID", String(getpid()), 1)
        let watchdog = Watchdog.make(notifier: notifier, logger: logger)
        XCTAssertEqual(watchdog?.intervalMicroseconds, 2_000_000)
        watchdog?.close()
    }

    /// The real timer and the real socket: pings arrive while frames are decoded, and stop when the
    /// decode loop stalls (the test stops calling progress()), and come back when it resumes.
    func testPingsStopWhenTheDecodeLoopStalls() throws {
        setenv("WATCHDOG_USEC", "100000", 1)
        setenv("WATCHDOG_PID", String(getpid()), 1)
        let notifier = ServiceNotifier(logger: logger)
        let lines = LogCapture()
        let watchdog = try XCTUnwrap(Watchdog.make(notifier: notifier, logger: Logger(level: .info, sink: { lines.append($0) })))
        defer { watchdog.close() }
        watchdog.statusChanged(.scanning)

        // A decode loop that makes progress.
        let running = ManagedFlag()
        let decoder = Thread {
            while running.value { watchdog.progress(); sleepThread(milliseconds: 2) }
        }
        running.value = true
        decoder.start()
        XCTAssertEqual(socket.receive(), "WATCHDOG=1")
        XCTAssertEqual(socket.receive(), "WATCHDOG=1")

        // Stall it. The first tick after the stall may still see the last frames; the ones after must not ping.
        running.value = false
        while !decoder.isFinished { sleepThread(milliseconds: 1) }
        waitForTicks(watchdog, 2)
        notifier.flush()
        _ = socket.drain()
        waitForTicks(watchdog, 4)
        notifier.flush()
        XCTAssertEqual(socket.drain(), [], "no WATCHDOG=1 while the decode loop is stalled")
        XCTAssertTrue(lines.all.contains { $0.hasPrefix("<3>no frame decoded for") }, "\(lines.all)")

        // It resumes.
        watchdog.progress()
        XCTAssertEqual(socket.receive(), "WATCHDOG=1")
    }

    /// Tick by tick, with the seam: progress, status exemptions.
    func testPingRulesTickByTick() {
        let calls = RecordingSystemdCalls()
        let notifier = ServiceNotifier(calls: calls, logger: logger)
        let watchdog = Watchdog(intervalMicroseconds: 10_000_000, notifier: notifier, logger: logger)
        func pingsAfterTick() -> Int {
            let before = calls.messages.filter { $0 == "WATCHDOG=1" }.count
            watchdog.tick()
            notifier.flush()
            return calls.messages.filter { $0 == "WATCHDOG=1" }.count - before
        }
        XCTAssertEqual(pingsAfterTick(), 1, "starting: no frames expected yet")
        watchdog.statusChanged(.scanning)
        XCTAssertEqual(pingsAfterTick(), 0, "scanning without a decoded frame")
        watchdog.progress()
        XCTAssertEqual(pingsAfterTick(), 1)
        XCTAssertEqual(pingsAfterTick(), 0)
        watchdog.statusChanged(.cameraLost)
        XCTAssertEqual(pingsAfterTick(), 1, "camera lost: the reconnect loop runs, no frames by design")
        watchdog.statusChanged(.paused)
        XCTAssertEqual(pingsAfterTick(), 1, "paused: no frames by design")
        watchdog.statusChanged(.scanning)
        XCTAssertEqual(pingsAfterTick(), 0)
        watchdog.progress()
        watchdog.progress()
        XCTAssertEqual(pingsAfterTick(), 1)
    }
}

/// Records what would be sent to systemd.
final class RecordingSystemdCalls: SystemdCalls, @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [String] = []
    var messages: [String] { lock.lock(); defer { lock.unlock() }; return sent }
    func notify(_ state: String) -> Result<Bool, Errno> {
        lock.lock(); sent.append(state); lock.unlock()
        return .success(true)
    }
    func watchdogMicroseconds() -> Result<UInt64?, Errno> { .success(nil) }
}

final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    var value: Bool {
        get { lock.lock(); defer { lock.unlock() }; return flag }
        set { lock.lock(); flag = newValue; lock.unlock() }
    }
}

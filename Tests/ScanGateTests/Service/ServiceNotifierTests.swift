import Core
import Foundation
import Service
import XCTest

/// sd_notify messages as systemd receives them: through a real NOTIFY_SOCKET the test listens on.
final class ServiceNotifierTests: XCTestCase {
    private var socket: ServiceNotifySocket!
    private let logger = Logger(level: .error, sink: { _ in })

    override func setUpWithError() throws { socket = try ServiceNotifySocket() }
    override func tearDown() { socket.close() }

    func testReadyOnceTheCameraStreamsThenStatusLines() {
        let notifier = ServiceNotifier(logger: logger)
        notifier.statusChanged(.scanning)
        XCTAssertEqual(socket.receive(), "READY=1\nSTATUS=scanning")
        notifier.statusChanged(.cameraLost)
        XCTAssertEqual(socket.receive(), "STATUS=camera lost")
        notifier.statusChanged(.scanning)
        XCTAssertEqual(socket.receive(), "STATUS=scanning", "READY=1 is sent once")
        notifier.statusChanged(.paused)
        XCTAssertEqual(socket.receive(), "STATUS=paused")
        notifier.statusChanged(.paused)
        notifier.ready()
        notifier.close()
        XCTAssertEqual(socket.receive(), "STOPPING=1\nSTATUS=stopping", "repeats and a second READY are not sent")
        notifier.statusChanged(.scanning)
        notifier.watchdogPing()
        notifier.flush()
        XCTAssertEqual(socket.drain(), [], "nothing after STOPPING=1")
    }

    func testReloadSendsReloadingThenReadyAgain() {
        let notifier = ServiceNotifier(logger: logger)
        notifier.ready()
        XCTAssertEqual(socket.receive(), "READY=1\nSTATUS=scanning")
        notifier.reloading()
        XCTAssertEqual(socket.receive(), "RELOADING=1\nSTATUS=reloading configuration")
        notifier.ready()
        XCTAssertEqual(socket.receive(), "READY=1\nSTATUS=scanning")
        notifier.close()
    }

    func testWatchdogPing() {
        let notifier = ServiceNotifier(logger: logger)
        notifier.watchdogPing()
        XCTAssertEqual(socket.receive(), "WATCHDOG=1")
    }

    func testOutsideSystemdNothingIsSentAndNothingFails() {
        unsetenv("NOTIFY_SOCKET")
        XCTAssertEqual(try LibSystemd().notify("READY=1").get(), false)
        let lines = LogCapture()
        let notifier = ServiceNotifier(logger: Logger(level: .debug, sink: { lines.append($0) }))
        notifier.statusChanged(.scanning)
        notifier.close()
        XCTAssertEqual(socket.drain(), [])
        XCTAssertEqual(lines.all.filter { $0.hasPrefix("<4>") }, [], "no warnings outside systemd")
    }

    func testAnUnreachableSocketIsLoggedNotFatal() {
        setenv("NOTIFY_SOCKET", socket.directory + "/nobody-listens", 1)
        let lines = LogCapture()
        let notifier = ServiceNotifier(logger: Logger(level: .debug, sink: { lines.append($0) }))
        notifier.statusChanged(.scanning)
        notifier.flush()
        XCTAssertTrue(lines.all.contains { $0.hasPrefix("<4>sd_notify READY=1: ") }, "\(lines.all)")
    }
}


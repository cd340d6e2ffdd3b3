#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Core
import Feedback
import GPIO
import MemoryGPIO
@testable import MQTT
import Platform
import Settings

/// A central server as the door controller: `feedback` commands through Debian's mosquitto reach the
/// daemon's feedback hub and play on the GPIO lines (the libgpiod fake), as a grant or a deny from a
/// read would.
final class MQTTFeedbackGPIOTests: XCTestCase {
    func testFeedbackGrantAndDenyFromTheBrokerPlayOnTheGPIOLines() throws {
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        var settings = MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool")
        settings.commands = true
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/cmd/+/result", prefix + "/status"])
        sub.waitSubscribed(port: broker.port)

        let gpiod = MemoryGpiod.pi5()
        var gs = GPIOSettings()
        gs.chip = "pinctrl-rp1"
        gs.lines = [.green: .name("GPIO17"), .red: .name("GPIO27"), .buzzer: .offset(18)]
        gs.goodLedMs = 60
        gs.goodBuzzMs = 20
        gs.errorBlinkMs = 30
        gs.errorBuzzMs = 20
        let log = LogCapture()
        var fs = FeedbackSettings()
        fs.master = .controller
        let hub = FeedbackHub(settings: fs, logger: log.logger)
        let gpio = try XCTUnwrap(GPIOFeedback.make(settings: gs, logger: log.logger, calls: gpiod, clock: SystemFeedbackClock()))
        hub.install(gpio, slot: "gpio")
        defer { hub.close(deadline: .now().adding(milliseconds: 2000)) }
        let output = try MQTTTestEvents.output(settings, library: library, log: log, feedback: hub)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(sub.wait(timeout: 15) { m in m.contains { $0.topic == prefix + "/status" && $0.text == "online" } })
        func levels(_ offset: Int) -> [Int32] { gpiod.sets.filter { $0.offset == offset }.map(\.value) }
        let expires = Int(Date().timeIntervalSince1970) + 60

        mosquittoPub(port: broker.port, topic: prefix + "/cmd/feedback", message: #"{"id":"g1","expires":\#(expires),"play":"grant"}"#)
        XCTAssertTrue(waitUntil(15) { levels(17) == [1, 0] && levels(18) == [1, 0] }, "green on then off, one buzz: \(gpiod.sets)")
        XCTAssertEqual(levels(27), [], "red untouched by a grant")

        mosquittoPub(port: broker.port, topic: prefix + "/cmd/feedback", message: #"{"id":"d1","expires":\#(expires),"play":"deny"}"#)
        XCTAssertTrue(waitUntil(15) { levels(27) == [1, 0, 1, 0] && levels(18) == [1, 0, 1, 0, 1, 0] },
                      "red double blink and two more buzzes: \(gpiod.sets)")
        XCTAssertEqual(levels(17), [1, 0], "green untouched by a deny")

        // A replayed grant (same id) plays nothing.
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/feedback", message: #"{"id":"g1","expires":\#(expires),"play":"grant"}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in
            sub.messages(on: prefix + "/cmd/feedback/result").compactMap(\.json).filter { $0["id"] as? String == "g1" }.count == 2
        })
        let g1 = sub.messages(on: prefix + "/cmd/feedback/result").compactMap(\.json).filter { $0["id"] as? String == "g1" }
        XCTAssertEqual(g1.map { $0["result"] as? String }, ["ok", "refused"])
        XCTAssertTrue(gpio.waitUntilIdle(deadline: .now().adding(milliseconds: 5000)))
        XCTAssertEqual(levels(17), [1, 0], "the replay did not light green again")
        sub.stop()
    }
}

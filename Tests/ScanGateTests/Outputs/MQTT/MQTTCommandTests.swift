import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// The command parser and replay guard alone, then commands end to end through the broker.
final class MQTTCommandTests: XCTestCase {
    let now: Int64 = 1_800_000_000

    func parse(_ name: String, _ json: String) -> Result<MQTTCommand, MQTTCommandRefusal> {
        MQTTCommandParser.parse(name: name, payload: Array(json.utf8), nowSeconds: now)
    }

    func refusal(_ name: String, _ json: String) -> String {
        if case .failure(let r) = parse(name, json) { return r.reason }
        return "accepted"
    }

    func testValidCommands() throws {
        let e = now + 30
        XCTAssertEqual(try parse("pause", #"{"id":"c1","expires":\#(e)}"#).get(),
                       MQTTCommand(id: "c1", name: .pause, expires: e, action: .daemon(.pause)))
        XCTAssertEqual(try parse("resume", #"{"expires":\#(e),"id":"a:b.c-d_e"}"#).get().action, .daemon(.resume))
        XCTAssertEqual(try parse("reload", #"{"id":"r","expires":\#(e)}"#).get().action, .daemon(.reload))
        XCTAssertEqual(try parse("feedback", #"{"id":"f","expires":\#(e),"play":"grant"}"#).get().action, .feedback(.grant))
        XCTAssertEqual(try parse("feedback", #"{"id":"f","expires":\#(e),"play":"deny"}"#).get().action, .feedback(.deny))
        XCTAssertEqual(try parse("feedback", #"{"id":"f","expires":\#(e),"play":"read-cue"}"#).get().action, .feedback(.readCue))
        let explicit = try parse("feedback", #"""
            {"id":"f2","expires":\#(e),"led":{"color":"red","off_color":"off","on_ms":100,"off_ms":100,"cycles":5},
             "led_permanent":{"color":"green"},"tone":{"on_ms":50,"off_ms":50,"ms":2000}}
            """#).get()
        XCTAssertEqual(explicit.action, .feedback(.command(FeedbackCommand(
            led: LEDCommand(temporary: .show(LEDBlink(onColor: .red, offColor: .off, onMs: 100, offMs: 100), for: .cycles(5)),
                            permanent: .steady(.green)),
            tone: ToneCommand(onMs: 50, offMs: 50, duration: .milliseconds(2000))))))
        XCTAssertEqual(try parse("feedback", #"{"id":"f3","expires":\#(e),"led":"cancel","tone":"off"}"#).get().action,
                       .feedback(.command(FeedbackCommand(led: LEDCommand(temporary: .cancel), tone: .silence))))
        XCTAssertEqual(try parse("feedback", #"{"id":"f4","expires":\#(e),"led":{"color":"amber"}}"#).get().action,
                       .feedback(.command(FeedbackCommand(led: LEDCommand(temporary: .show(.steady(.amber), for: .untilReplaced))))))
        XCTAssertEqual(try parse("beep", #"{"id":"b","expires":\#(e)}"#).get().action,
                       .feedback(.command(FeedbackCommand(tone: ToneCommand(onMs: 150, offMs: 100, duration: .cycles(1))))))
        XCTAssertEqual(try parse("beep", #"{"id":"b","expires":\#(e),"on_ms":80,"off_ms":40,"count":3}"#).get().action,
                       .feedback(.command(FeedbackCommand(tone: ToneCommand(onMs: 80, offMs: 40, duration: .cycles(3))))))
    }

    func testRefusals() {
        let e = now + 30
        XCTAssertEqual(refusal("pause", #"{"id":"c1","expires":\#(now)}"#),
                       "expired at 2027-01-15T08:00:00.000Z; it is now 2027-01-15T08:00:00.000Z")
        XCTAssertTrue(refusal("pause", #"{"id":"c1","expires":\#(now + 3601)}"#).contains("more than 3600 s ahead"))
        XCTAssertEqual(refusal("pause", #"{"expires":\#(e)}"#), "the command has no \"id\"")
        XCTAssertTrue(refusal("pause", #"{"id":"has space","expires":\#(e)}"#).contains("\"id\" must be 1-64 characters"))
        XCTAssertTrue(refusal("pause", #"{"id":"\#(String(repeating: "a", count: 65))","expires":\#(e)}"#).contains("1-64"))
        XCTAssertEqual(refusal("pause", #"{"id":"c","expires":"soon"}"#), "expires must be a whole number")
        XCTAssertEqual(refusal("pause", #"{"id":"c"}"#), "expires is missing")
        XCTAssertEqual(refusal("pause", #"{"id":"c","expires":\#(e),"force":true}"#), "unknown member \"force\"")
        XCTAssertTrue(refusal("pause", #"{"id":"c","id":"d","expires":\#(e)}"#).contains("appears twice"), "strict JSON")
        XCTAssertTrue(refusal("pause", #"{"id":"c","expires":\#(e)} x"#).hasPrefix("not a JSON command"))
        XCTAssertTrue(refusal("pause", "[1]").contains("a command is a JSON object"))
        XCTAssertTrue(refusal("open-door", #"{"id":"c","expires":\#(e)}"#).hasPrefix("unknown command 'open-door'"))
        XCTAssertTrue(refusal("feedback", #"{"id":"c","expires":\#(e)}"#).contains("feedback needs"))
        XCTAssertTrue(refusal("feedback", #"{"id":"c","expires":\#(e),"play":"unlock"}"#).contains("grant, deny or read-cue"))
        XCTAssertTrue(refusal("feedback", #"{"id":"c","expires":\#(e),"play":"grant","tone":"off"}"#).contains("not both"))
        XCTAssertEqual(refusal("feedback", #"{"id":"c","expires":\#(e),"led":{"color":"blue"}}"#),
                       "led.color is off, red, green or amber, not \"blue\"")
        XCTAssertEqual(refusal("feedback", #"{"id":"c","expires":\#(e),"led":{"color":"red","off_ms":10}}"#), "led.on_ms is missing")
        XCTAssertEqual(refusal("feedback", #"{"id":"c","expires":\#(e),"led":{"color":"red","cycles":2,"ms":5}}"#),
                       "led: give \"cycles\" or \"ms\", not both")
        XCTAssertEqual(refusal("feedback", #"{"id":"c","expires":\#(e),"tone":{"on_ms":99999}}"#), "tone.on_ms is 99999; allowed 1-10000")
        XCTAssertEqual(refusal("feedback", #"{"id":"c","expires":\#(e),"led":{"color":"red","blink":1}}"#), "unknown member \"led.blink\"")
        XCTAssertEqual(refusal("beep", #"{"id":"c","expires":\#(e),"count":21}"#), "count is 21; allowed 1-20")
        XCTAssertTrue(refusal("pause", String(repeating: " ", count: 5000)).contains("longer than 4096 bytes"))
        // The id is reported back when it could be read.
        if case .failure(let r) = parse("pause", #"{"id":"c9","expires":\#(now - 5)}"#) { XCTAssertEqual(r.id, "c9") } else { XCTFail() }
        if case .failure(let r) = parse("pause", #"{"id":"c9","expires":"x"}"#) { XCTAssertEqual(r.id, "c9") } else { XCTFail() }
    }

    func testReplayGuardActsOncePerIdIsBoundedAndForgetsExpiredIds() {
        var guardian = CommandReplayGuard(capacity: 3, slackSeconds: 0)
        let boot = TestClock.newBootID()
        let t0: UInt64 = 1_000_000_000_000
        XCTAssertEqual(guardian.admit("a", expires: now + 10, now: now, boot: t0, bootID: boot), .new)
        XCTAssertEqual(guardian.admit("a", expires: now + 10, now: now + 9, boot: t0 + 9_000_000_000, bootID: boot), .repeated)
        XCTAssertEqual(guardian.admit("b", expires: now + 100, now: now, boot: t0, bootID: boot), .new)
        XCTAssertEqual(guardian.admit("c", expires: now + 100, now: now, boot: t0, bootID: boot), .new)
        XCTAssertEqual(guardian.admit("d", expires: now + 100, now: now, boot: t0, bootID: boot), .full, "refused, never forgotten early")
        // a's lifetime is over by both clocks: its slot is free again (a command with a's id would now be refused as expired).
        XCTAssertEqual(guardian.admit("d", expires: now + 100, now: now + 11, boot: t0 + 11_000_000_000, bootID: boot), .new)
        XCTAssertEqual(guardian.count, 3)
    }

    /// A backward wall-clock step does not let an id in again while its wall-clock expiry is still ahead,
    /// even once the boot-clock deadline has passed; a forward step does not either, while the boot-clock
    /// deadline is ahead. An id is forgotten only when both have passed.
    func testReplayGuardKeepsAnIdUntilBothClocksSayItExpired() {
        var guardian = CommandReplayGuard(capacity: 10, slackSeconds: 60)
        let boot = TestClock.newBootID()
        let t0: UInt64 = 1_000_000_000_000
        XCTAssertEqual(guardian.admit("x", expires: now + 30, now: now, boot: t0, bootID: boot), .new)
        // The wall clock stepped back an hour, 200 s later: the boot deadline (90 s) is past, the wall expiry is not.
        XCTAssertEqual(guardian.admit("x", expires: now + 30, now: now - 3600 + 200, boot: t0 + 200_000_000_000, bootID: boot), .repeated)
        // Stepped forward a day, 10 s later: the wall expiry is past, the boot deadline is not.
        XCTAssertEqual(guardian.admit("x", expires: now + 30, now: now + 86_400, boot: t0 + 10_000_000_000, bootID: boot), .repeated)
        // Another boot: only the wall clock counts.
        XCTAssertEqual(guardian.admit("x", expires: now + 30, now: now + 10, boot: 1, bootID: TestClock.newBootID()), .repeated)
        XCTAssertEqual(guardian.admit("x", expires: now + 300, now: now + 91, boot: 1, bootID: TestClock.newBootID()), .new)
    }

    func testResultJSON() throws {
        let text = MQTTCommandResult(id: nil, command: "pause", outcome: .refused("not a JSON command: \"x\""))
            .json(kiosk: "k1", wallTimeNanoseconds: 1_800_000_000_000_000_000)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertTrue(json["id"] is NSNull)
        XCTAssertEqual(json["result"] as? String, "refused")
        XCTAssertEqual(json["detail"] as? String, "not a JSON command: \"x\"")
        XCTAssertEqual(json["kiosk"] as? String, "k1")
        XCTAssertEqual(json["time"] as? String, "2027-01-15T08:00:00.000Z")
    }

    // MARK: - Through the broker

    func testCommandsThroughTheBroker() throws {
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        var settings = MQTTTestEvents.settings(port: broker.port, spool: spool)
        settings.commands = true
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/cmd/+/result", prefix + "/status", prefix + "/state"])
        sub.waitSubscribed(port: broker.port)
        let handler = RecordingCommandHandler()
        let feedback = RecordingFeedback()
        let log = LogCapture()
        let expires = Int64(Date().timeIntervalSince1970) + 60
        func results(_ name: String) -> [[String: Any]] { sub.messages(on: prefix + "/cmd/\(name)/result").compactMap(\.json) }
        // A retained command, waiting in the broker: it would come again on every connection, so it is refused.
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/reload", message: #"{"id":"ret","expires":\#(expires)}"#, retain: true)
        let output = try MQTTTestEvents.output(settings, library: library, log: log, commands: handler, feedback: feedback,
                                                state: { MQTTState(status: handler.status, version: "t", uptimeSeconds: 1) })
        handler.observe(output)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        func states() -> [String] { sub.messages(on: prefix + "/state").compactMap { $0.json?["status"] as? String } }
        // Its result also says the subscription is in place.
        XCTAssertTrue(sub.wait(timeout: 10) { _ in !results("reload").isEmpty })
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/reload", message: "", retain: true)   // clears it
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"p1","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 10) { _ in !results("pause").isEmpty })
        XCTAssertEqual(results("pause").first?["id"] as? String, "p1")
        XCTAssertEqual(results("pause").first?["result"] as? String, "ok")
        XCTAssertEqual(results("pause").first?["detail"] as? String, "paused")
        XCTAssertTrue(sub.wait(timeout: 10) { _ in states().last == "paused" }, "the retained state follows at once: \(states())")

        mosquittoPub(port: broker.port, topic: prefix + "/cmd/resume", message: #"{"id":"r1","expires":\#(expires)}"#)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/feedback", message: #"{"id":"g1","expires":\#(expires),"play":"grant"}"#)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/beep", message: #"{"id":"b1","expires":\#(expires),"count":2}"#)
        // Refused: expired, a repeated id, malformed, retained, unknown.
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"old","expires":\#(expires - 3600)}"#)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"p1","expires":\#(expires)}"#)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"m1","expires":\#(expires)"#)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/unlock", message: #"{"id":"u1","expires":\#(expires)}"#)

        XCTAssertTrue(sub.wait(timeout: 15) { _ in
            results("pause").count == 4 && results("resume").count == 1 && results("feedback").count == 1
                && results("beep").count == 1 && results("unlock").count == 1
        }, "\(sub.messages.map { "\($0.topic) \($0.text)" })")
        XCTAssertEqual(handler.performed, [.pause, .resume], "pause and resume reached the handler once each; reload (retained) did not")
        XCTAssertEqual(feedback.requests, [.grant, .command(FeedbackCommand(tone: ToneCommand(onMs: 150, offMs: 100, duration: .cycles(2))))])
        XCTAssertEqual(Set(feedback.origins), ["mqtt"])
        XCTAssertEqual(results("resume").first?["result"] as? String, "ok")
        XCTAssertTrue(sub.wait(timeout: 10) { _ in states().last == "scanning" }, "\(states())")
        XCTAssertEqual(results("feedback").first?["detail"] as? String, "played grant")

        let pause = results("pause")
        let expired = try XCTUnwrap(pause.first { $0["id"] as? String == "old" })
        XCTAssertEqual(expired["result"] as? String, "refused")
        XCTAssertTrue((expired["detail"] as? String)?.hasPrefix("expired at") == true, "\(expired)")
        let repeated = try XCTUnwrap(pause.last { $0["id"] as? String == "p1" })
        XCTAssertEqual(repeated["result"] as? String, "refused")
        XCTAssertTrue((repeated["detail"] as? String)?.contains("was already acted on") == true, "\(repeated)")
        let malformed = try XCTUnwrap(pause.first { $0["id"] is NSNull })
        XCTAssertEqual(malformed["result"] as? String, "refused")
        XCTAssertTrue((malformed["detail"] as? String)?.hasPrefix("not a JSON command") == true, "\(malformed)")
        XCTAssertTrue((results("reload").first?["detail"] as? String)?.contains("retained command is refused") == true)
        XCTAssertTrue((results("unlock").first?["detail"] as? String)?.hasPrefix("unknown command 'unlock'") == true)
        XCTAssertTrue(log.contains("mqtt: command pause id p1: paused"), log.all.joined(separator: "\n"))
    }

    /// With mqtt-commands off (the default) the kiosk does not subscribe: a command gets no answer and does nothing.
    func testCommandsOffByDefault() throws {
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/#"])
        sub.waitSubscribed(port: broker.port)
        let handler = RecordingCommandHandler()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library,
                                                log: LogCapture(), commands: handler)
        XCTAssertTrue(sub.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/state" } })
        let expires = Int64(Date().timeIntervalSince1970) + 60
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"p1","expires":\#(expires)}"#)
        // An event reported after the command comes back after it; by then a result would have been sent.
        output.report(MQTTTestEvents.event(seq: 1, text: "marker"))
        XCTAssertTrue(sub.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/event" } })
        output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000))
        XCTAssertTrue(sub.messages.filter { $0.topic.hasSuffix("/result") }.isEmpty)
        XCTAssertEqual(handler.performed, [])
        XCTAssertTrue(broker.log.contains("kiosk-1") && !broker.log.contains("Client kiosk-1 subscribed"), "no subscription")
    }
}

import Core
import MQTT
import FoundationEssentials

/// The MQTT command parser on hostile payloads: a command that reaches the daemon or the feedback seam
/// must be exactly what the payload said and within every limit; a refusal is one line; the result
/// message is valid JSON whatever the id and reason hold.
enum MQTTCommandFuzz {
    static let now: Int64 = 1_800_000_000
    static let names = MQTTCommand.Name.allCases.map(\.rawValue) + ["unlock", "", "pause/x", "PAUSE"]

    @Sendable static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let name = input.pick(names)
        let payload = input.rest()
        let result = MQTTCommandParser.parse(name: name, payload: payload, nowSeconds: now)
        let resultText: String
        switch result {
        case .failure(let refusal):
            require(!refusal.reason.isEmpty, "a refusal without a reason")
            require(!refusal.reason.utf8.contains(0x0A), "a refusal reason spans lines: \(refusal.reason)")
            if let id = refusal.id { requireValidID(id) }
            resultText = MQTTCommandResult(id: refusal.id, command: name, outcome: .refused(refusal.reason))
                .json(kiosk: "k1", wallTimeNanoseconds: now * 1_000_000_000)
        case .success(let c):
            require(c.name.rawValue.bytesEqual(name), "parsed as \(c.name) from topic name \(name)")
            requireValidID(c.id)
            require(c.expires > now && c.expires <= now + MQTTCommandParser.maxLifetimeSeconds, "expiry \(c.expires) accepted")
            require(payload.count <= MQTTCommandParser.maxPayload, "a payload over the limit accepted")
            // An independent parser agrees on the id and expiry.
            guard let head = try? JSONDecoder().decode(Head.self, from: Data(payload)) else {
                require(false, "accepted, but not a JSON object with id and expires for Foundation's decoder")
                return
            }
            require(head.id == c.id, "the id differs from the payload's")
            require(head.expires == c.expires, "the expiry differs from the payload's")
            switch (c.name, c.action) {
            case (.pause, .daemon(.pause)), (.resume, .daemon(.resume)), (.reload, .daemon(.reload)): break
            case (.feedback, .feedback(let request)), (.beep, .feedback(let request)): check(request, name: c.name)
            default: require(false, "\(c.name) became \(c.action)")
            }
            resultText = MQTTCommandResult(id: c.id, command: name, outcome: .ok("done")).json(kiosk: "k1", wallTimeNanoseconds: 0)
        }
        guard let json = try? JSONDecoder().decode(ResultMessage.self, from: Data(resultText.utf8)) else {
            require(false, "the result message is not JSON: \(resultText)")
            return
        }
        require(json.command == name, "the result names another command")
        require(!resultText.utf8.contains { $0 < 0x20 }, "a raw control byte in the result message")
    }

    struct Head: Decodable {
        let id: String
        let expires: Int64
    }

    struct ResultMessage: Decodable {
        let id: String?
        let command: String
        let result: String
        let detail: String
        let kiosk: String
        let time: String
    }

    static func requireValidID(_ id: String) {
        require((1...64).contains(id.utf8.count), "an id of \(id.utf8.count) bytes")
        require(id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E || b == 0x3A
        }, "an id with a character outside A-Z a-z 0-9 . _ : -")
    }

    static func check(_ request: FeedbackRequest, name: MQTTCommand.Name) {
        guard case .command(let command) = request else {
            require(name == .feedback, "beep played a pattern")
            return
        }
        func duration(_ d: FeedbackDuration) {
            switch d {
            case .cycles(let n): require((1...1000).contains(n), "\(n) cycles")
            case .milliseconds(let ms): require((1...600_000).contains(ms), "\(ms) ms")
            case .untilReplaced: break
            }
        }
        func blink(_ b: LEDBlink) { require(b.onMs <= 60_000 && b.offMs <= 60_000, "a blink of \(b.onMs)/\(b.offMs) ms") }
        if let led = command.led {
            if case .show(let b, let d) = led.temporary { blink(b); duration(d) }
            if let p = led.permanent { blink(p) }
        }
        if let tone = command.tone, !tone.isSilence {
            require(tone.onMs >= 1 && tone.onMs <= 10_000 && tone.offMs <= 10_000, "a tone of \(tone.onMs)/\(tone.offMs) ms")
            duration(tone.duration)
            if name == .beep { require(tone.onMs <= 2000, "a beep longer than 2 s") }
        }
        require(command.led != nil || command.tone != nil, "an empty feedback command")
    }
}

import Core
@testable import MQTT
import Foundation
import Core
import Platform
import XCTest
import Settings

/// MQTTSettings: defaults, validate() messages, resolve() (client id, prefix, password file, key file).
final class MQTTSettingsTests: XCTestCase {
    func message(_ edit: (inout MQTTSettings) -> Void) -> String {
        var s = MQTTSettings()
        s.host = "broker.example"
        edit(&s)
        do {
            try s.validate()
            return "valid"
        } catch {
            return error.message
        }
    }

    func testDefaults() {
        let s = MQTTSettings()
        XCTAssertFalse(s.enabled, "empty mqtt-host: MQTT is off")
        XCTAssertNoThrow(try s.validate())
        XCTAssertEqual(s.effectivePort, 1883)
        XCTAssertEqual(s.keepaliveSeconds, 30)
        XCTAssertEqual(s.stateIntervalSeconds, 60)
        XCTAssertFalse(s.commands)
        XCTAssertFalse(s.homeAssistant)
        XCTAssertEqual(s.spool, "/var/lib/scangate/mqtt-spool")
        XCTAssertEqual(s.spoolMaxMB, 64)
        XCTAssertEqual(s.spoolMaxAgeHours, 168)
        var tls = s
        tls.tlsCA = "/etc/scangate/ca.crt"
        XCTAssertEqual(tls.effectivePort, 8883)
    }

    func testValidationMessagesNameTheOptionAndWhatIsAllowed() {
        XCTAssertEqual(message { _ in }, "valid")
        XCTAssertEqual(message { $0.port = 0 }, "mqtt-port: 0 is out of range; allowed 1-65535")
        XCTAssertEqual(message { $0.host = "bad host" },
                       "mqtt-host: 'bad host' is not a host name or address (letters, digits, '-', '.', ':', '_'; at most 253)")
        XCTAssertTrue(message { $0.clientID = "kiosk/1" }.hasPrefix("mqtt-client-id: 'kiosk/1' has a character that is not allowed"))
        XCTAssertTrue(message { $0.clientID = "k+" }.contains("no '/', '+', '#'"))
        XCTAssertTrue(message { $0.clientID = "k\u{0}1" }.contains("not allowed"))
        XCTAssertEqual(message { $0.clientID = String(repeating: "k", count: 65) }, "mqtt-client-id: 1 to 64 characters are allowed, not 65")
        XCTAssertTrue(message { $0.topicPrefix = "site/+/door" }.contains("the wildcard '+'"))
        XCTAssertTrue(message { $0.topicPrefix = "site/#" }.contains("the wildcard '#'"))
        XCTAssertTrue(message { $0.topicPrefix = "site/\u{0}" }.contains("a control character"))
        XCTAssertTrue(message { $0.topicPrefix = "$SYS/x" }.contains("may not start with '$'"))
        XCTAssertTrue(message { $0.topicPrefix = "site//door" }.contains("an empty level"))
        XCTAssertTrue(message { $0.topicPrefix = "/site" }.contains("an empty level"))
        XCTAssertTrue(message { $0.topicPrefix = String(repeating: "a", count: 161) }.hasPrefix("mqtt-topic-prefix: 1 to 160 bytes"))
        XCTAssertEqual(message { $0.passwordFile = "/etc/scangate/mqtt.pass" },
                       "mqtt-password-file needs mqtt-username (MQTT sends a password only with a user name)")
        XCTAssertTrue(message { $0.tlsCert = "/c.crt" }.hasPrefix("mqtt-tls-cert and mqtt-tls-key go together"))
        XCTAssertTrue(message { $0.tlsCert = "/c.crt"; $0.tlsKey = "/c.key" }.hasPrefix("mqtt-tls-cert needs mqtt-tls-ca"))
        XCTAssertEqual(message { $0.keepaliveSeconds = 2 }, "mqtt-keepalive-s: 2 is out of range; allowed 5-3600")
        XCTAssertEqual(message { $0.stateIntervalSeconds = 1 }, "mqtt-state-interval-s: 1 is out of range; allowed 5-86400")
        XCTAssertEqual(message { $0.spoolMaxMB = 0 }, "mqtt-spool-max-mb: 0 is out of range; allowed 1-4096")
        XCTAssertEqual(message { $0.spoolMaxAgeHours = 0 }, "mqtt-spool-max-age-h: 0 is out of range; allowed 1-8760")
        XCTAssertTrue(message { $0.spool = "" }.hasPrefix("mqtt-spool: a directory is needed"))
        XCTAssertEqual(message { $0.tlsCA = "system" }, "valid")
    }

    func testResolveDefaultsTheClientIDToTheHostNameAndThePrefixToIt() throws {
        var s = MQTTSettings()
        s.host = "127.0.0.1"
        let c = try s.resolve(hostName: "door-3.lobby")
        XCTAssertEqual(c.clientID, "door-3.lobby")
        XCTAssertEqual(c.topics.prefix, "scangate/door-3.lobby")
        XCTAssertEqual(c.topics.event, "scangate/door-3.lobby/event")
        XCTAssertEqual(c.topics.commandResult("pause"), "scangate/door-3.lobby/cmd/pause/result")
        XCTAssertEqual(c.topics.commandName(ofTopic: "scangate/door-3.lobby/cmd/pause"), "pause")
        XCTAssertNil(c.topics.commandName(ofTopic: "scangate/door-3.lobby/cmd/pause/result"))
        XCTAssertNil(c.topics.commandName(ofTopic: "scangate/other/cmd/pause"))
        XCTAssertThrowsError(try s.resolve(hostName: "bad host")) { error in
            XCTAssertTrue("\(error)".hasPrefix("mqtt-client-id: the default, the host name 'bad host', is not a valid client id"), "\(error)")
        }
        s.clientID = "k1"
        s.topicPrefix = "site/a/doors/k1"
        XCTAssertEqual(try s.resolve(hostName: "x").topics.state, "site/a/doors/k1/state")
    }

    func testPasswordFileMustBePrivateAndIsReadWithoutItsLineEnd() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/mqtt.pass"
        try TestFiles.write("s3cret pass\n", to: path)
        var s = MQTTSettings()
        s.host = "127.0.0.1"
        s.username = "kiosk"
        s.passwordFile = path
        chmod(path, 0o644)
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { error in
            XCTAssertEqual("\(error)", "mqtt-password-file \(path): permissions 0644 let others read it; allowed: only its owner (chmod 600 \(path))")
            XCTAssertFalse("\(error)".contains("s3cret"), "the password is never in a message")
        }
        chmod(path, 0o600)
        XCTAssertEqual(try s.resolve(hostName: "h").password, "s3cret pass")
        try TestFiles.write("one\ntwo\n", to: path)
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { XCTAssertTrue("\($0)".contains("on one line"), "\($0)") }
        try TestFiles.write("", to: path)
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { XCTAssertTrue("\($0)".contains("the file is empty"), "\($0)") }
        s.passwordFile = dir + "/missing"
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { XCTAssertTrue("\($0)".contains("No such file"), "\($0)") }
        // The description of the resolved configuration never shows the password.
        s.passwordFile = path
        try TestFiles.write("hunter2\n", to: path)
        let c = try s.resolve(hostName: "h")
        XCTAssertFalse("\(c)".contains("hunter2"))
    }

    func testTLSKeyMustBePrivate() throws {
        let dir = try TestFiles.temporaryDirectory()
        for name in ["ca.crt", "k.crt", "k.key"] { try TestFiles.write("x", to: dir + "/" + name) }
        chmod(dir + "/ca.crt", 0o644)
        chmod(dir + "/k.key", 0o640)
        var s = MQTTSettings()
        s.host = "127.0.0.1"
        s.tlsCA = dir + "/ca.crt"
        s.tlsCert = dir + "/k.crt"
        s.tlsKey = dir + "/k.key"
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { error in
            XCTAssertTrue("\(error)".hasPrefix("mqtt-tls-key \(dir)/k.key: permissions 0640 let others read it"), "\(error)")
        }
        chmod(dir + "/k.key", 0o600)
        XCTAssertNoThrow(try s.resolve(hostName: "h"))
        s.tlsCA = dir + "/nope.crt"
        XCTAssertThrowsError(try s.resolve(hostName: "h")) { XCTAssertTrue("\($0)".hasPrefix("mqtt-tls-ca \(dir)/nope.crt: "), "\($0)") }
    }

    /// The password file is opened without following a link and the opened file is what is checked: a
    /// symbolic link, a FIFO, a file of another owner or with group/other bits is refused, each said so.
    func testThePasswordFileIsCheckedAsOpened() throws {
        let dir = try TestFiles.temporaryDirectory()
        let real = dir + "/real.pass"
        try TestFiles.write("pw\n", to: real)
        chmod(real, 0o600)
        var s = MQTTSettings()
        s.host = "127.0.0.1"
        s.username = "kiosk"
        func refusal(_ path: String) -> String {
            s.passwordFile = path
            do {
                _ = try s.resolve(hostName: "h")
                return "accepted"
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(refusal(real), "accepted")
        let link = dir + "/link.pass"
        XCTAssertEqual(symlink(real, link), 0)
        XCTAssertEqual(refusal(link), "mqtt-password-file \(link): a symbolic link; give the file itself (a link could be pointed elsewhere)")
        let fifo = dir + "/fifo.pass"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(refusal(fifo), "mqtt-password-file \(fifo): not a regular file", "refused without waiting for a writer")
        chmod(real, 0o640)
        XCTAssertEqual(refusal(real), "mqtt-password-file \(real): permissions 0640 let others read it; allowed: only its owner (chmod 600 \(real))")
        chmod(real, 0o600)
        guard geteuid() == 0 else { throw XCTSkip("changing a file's owner needs root") }
        XCTAssertEqual(chown(real, 65534, 65534), 0)
        XCTAssertEqual(refusal(real), "mqtt-password-file \(real): owned by uid 65534, not by the user scangate runs as (uid 0); "
                       + "chown it to the service user")
    }

    /// A CA file that others may change (or whose directory lets them replace it) would let them stand in
    /// for the broker: refused, naming the file or directory and the chmod or chown that fixes it.
    func testACAFileOthersCanChangeIsRefused() throws {
        let dir = try TestFiles.temporaryDirectory()
        let ca = dir + "/ca.crt"
        try TestFiles.write("x", to: ca)
        chmod(ca, 0o644)
        var s = MQTTSettings()
        s.host = "127.0.0.1"
        s.tlsCA = ca
        func refusal() -> String {
            do {
                _ = try s.resolve(hostName: "h")
                return "accepted"
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(refusal(), "accepted")
        chmod(ca, 0o664)
        XCTAssertEqual(refusal(), "mqtt-tls-ca \(ca): permissions 0664 let others change it (they could then stand in for the broker); chmod go-w \(ca)")
        chmod(ca, 0o646)
        XCTAssertTrue(refusal().hasSuffix("chmod go-w \(ca)"), refusal())
        chmod(ca, 0o644)
        chmod(dir, 0o777)
        XCTAssertEqual(refusal(), "mqtt-tls-ca \(ca): its directory \(dir) (permissions 0777) lets others replace the file "
                       + "(and stand in for the broker); chmod go-w \(dir)")
        chmod(dir, 0o1777)
        XCTAssertEqual(refusal(), "accepted", "a sticky directory (like /tmp) does not let others replace a file they do not own")
        chmod(dir, 0o700)
        guard geteuid() == 0 else { throw XCTSkip("changing a file's owner needs root") }
        XCTAssertEqual(chown(ca, 65534, 65534), 0)
        XCTAssertEqual(refusal(), "mqtt-tls-ca \(ca): owned by uid 65534, who can change it (and stand in for the broker); chown root \(ca)")
        s.tlsCA = "system"
        XCTAssertEqual(refusal(), "accepted", "the system's CAs are not checked here")
    }

    func testEventIDsAreRandomPerRunAndCarryTheSeq() throws {
        let a = try EventIDs.random(), b = try EventIDs.random()
        XCTAssertNotEqual(a.run, b.run)
        XCTAssertEqual(a.run.count, 16)
        XCTAssertTrue(a.run.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertEqual(a.id(seq: 42), a.run + "-42")
    }

    func testEventPayloadIsTheStdoutLineWithIdAndKioskFirst() throws {
        let event = MQTTTestEvents.event(seq: 7, text: "hello")
        let line = EventLine.json(event)
        let payload = MQTTOutput.eventPayload(line, id: "abc-7", kiosk: "k1")
        XCTAssertEqual(payload, "{\"id\":\"abc-7\",\"kiosk\":\"k1\"," + line.dropFirst())
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
        XCTAssertEqual(json["data"] as? String, "hello")
        XCTAssertEqual(json["seq"] as? Int, 7)
        XCTAssertEqual(MQTTOutput.eventPayload("{}", id: "i", kiosk: "k"), "{\"id\":\"i\",\"kiosk\":\"k\"}")
    }

    func testHomeAssistantDiscoveryFollowsTheDocumentedSchema() throws {
        let topics = MQTTTopics(prefix: "scangate/door.3")
        let messages = HomeAssistantDiscovery.messages(clientID: "door.3", topics: topics, version: "0.1.0")
        XCTAssertEqual(messages.map(\.topic), [
            "homeassistant/tag/door_3/read/config",
            "homeassistant/sensor/door_3/last_read/config",
            "homeassistant/sensor/door_3/status/config",
            "homeassistant/binary_sensor/door_3/online/config",
        ], "node_id and object_id only [a-zA-Z0-9_-]")
        var byTopic: [String: [String: Any]] = [:]
        for m in messages { byTopic[m.topic] = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(m.payload.utf8)) as? [String: Any]) }
        let tag = try XCTUnwrap(byTopic["homeassistant/tag/door_3/read/config"])
        XCTAssertEqual(tag["topic"] as? String, "scangate/door.3/event", "the tag scanner's required topic")
        XCTAssertNotNil(tag["device"] as? [String: Any], "the tag scanner's required device")
        XCTAssertEqual((tag["device"] as? [String: Any])?["identifiers"] as? [String], ["scangate_door_3"])
        let online = try XCTUnwrap(byTopic["homeassistant/binary_sensor/door_3/online/config"])
        XCTAssertEqual(online["state_topic"] as? String, "scangate/door.3/status")
        XCTAssertEqual(online["payload_on"] as? String, "online")
        XCTAssertEqual(online["payload_off"] as? String, "offline")
        XCTAssertEqual(online["device_class"] as? String, "connectivity")
        let last = try XCTUnwrap(byTopic["homeassistant/sensor/door_3/last_read/config"])
        XCTAssertEqual(last["state_topic"] as? String, "scangate/door.3/event")
        XCTAssertEqual(last["availability_topic"] as? String, "scangate/door.3/status")
        XCTAssertEqual(last["unique_id"] as? String, "scangate_door_3_last_read")
        XCTAssertTrue((last["value_template"] as? String)?.contains("[:255]") == true, "Home Assistant's state is at most 255 characters")
    }
}

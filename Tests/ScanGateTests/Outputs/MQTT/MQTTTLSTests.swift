import Core
@testable import MQTT
import Foundation
import Platform
import XCTest
import Settings

/// TLS with a test CA made by openssl: a client certificate accepted; a wrong CA, an expired
/// certificate and a broker certificate for another host name refused, with a log line that says so.
final class MQTTTLSTests: XCTestCase {
    var library: MosquittoLibrary!
    var ca: MQTTTestCA!
    var server: (cert: String, key: String)!

    override func setUpWithError() throws {
        library = try MosquittoLibrary()
        ca = try MQTTTestCA()
        server = try ca.issue("server", commonName: "broker", subjectAltName: "IP:127.0.0.1,DNS:localhost")
    }

    func tlsBroker(serverCert: (cert: String, key: String)? = nil) throws -> MQTTTestBroker {
        let s = serverCert ?? server!
        let b = try MQTTTestBroker(listener: { port, _ in self.ca.listener(port: port, serverCert: s.cert, serverKey: s.key) })
        try b.start()
        return b
    }

    func settings(_ broker: MQTTTestBroker, client: (cert: String, key: String), caFile: String? = nil) throws -> MQTTSettings {
        var s = MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool")
        s.tlsCA = caFile ?? ca.certificate
        s.tlsCert = client.cert
        s.tlsKey = client.key
        return s
    }

    /// mosquitto_sub with its own client certificate.
    func subscriber(_ broker: MQTTTestBroker, topics: [String]) throws -> MQTTTestSubscriber {
        let c = try ca.issue("consumer", commonName: "consumer")
        return try MQTTTestSubscriber(port: broker.port, topics: topics,
                                      extraArgs: ["--cafile", ca.certificate, "--cert", c.cert, "--key", c.key])
    }

    func testAClientCertificateFromTheCAIsAccepted() throws {
        let broker = try tlsBroker()
        let client = try ca.issue("kiosk-1", commonName: "kiosk-1")
        let sub = try subscriber(broker, topics: ["scangate/kiosk-1/#"])
        let log = LogCapture()
        let output = try MQTTTestEvents.output(try settings(broker, client: client), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(waitUntil(15) { output.link.connected }, "\(output.link) \(log.all)")
        // The retained status reaches the consumer only once its subscription is in place (it may subscribe
        // after the kiosk connects); an event is not retained, so it is reported after that.
        XCTAssertTrue(sub.wait(timeout: 15) { $0.contains { $0.topic == "scangate/kiosk-1/status" } },
                      "the consumer's subscription: \(sub.messages.map(\.topic))")
        output.report(MQTTTestEvents.event(seq: 1, text: "over TLS"))
        XCTAssertTrue(sub.wait(timeout: 15) { $0.contains { $0.topic == "scangate/kiosk-1/event" } },
                      "\(sub.messages.map(\.topic))\n\(broker.log)")
        XCTAssertEqual(sub.messages(on: "scangate/kiosk-1/event").first?.json?["data"] as? String, "over TLS")
        XCTAssertTrue(broker.log.contains("as kiosk-1") && broker.log.contains("u'kiosk-1'"), "the CN is the user: \(broker.log)")
        XCTAssertTrue(log.contains("connected to broker 127.0.0.1:\(broker.port) as kiosk-1"), log.all.joined(separator: "\n"))
    }

    func testAWrongCAIsRefusedWithALogLineThatSaysSo() throws {
        let broker = try tlsBroker()
        let client = try ca.issue("kiosk-1", commonName: "kiosk-1")
        let other = try MQTTTestCA(name: "other-ca")
        let log = LogCapture()
        let output = try MQTTTestEvents.output(try settings(broker, client: client, caFile: other.certificate), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(15) { log.contains("certificate verify failed") }, log.all.joined(separator: "\n"))
        let line = try XCTUnwrap(log.all.first { $0.contains("certificate verify failed") })
        XCTAssertTrue(line.contains("mqtt: cannot connect to broker 127.0.0.1:\(broker.port): TLS with broker"), line)
        XCTAssertFalse(output.link.connected)
        XCTAssertTrue(output.health.lastError?.contains("certificate verify failed") == true, "\(output.health)")
        XCTAssertEqual(output.health.state, .degraded)
    }

    func testAnExpiredClientCertificateIsRefusedWithALogLineThatSaysSo() throws {
        let broker = try tlsBroker()
        let client = try ca.issue("kiosk-1", commonName: "kiosk-1", expired: true)
        let log = LogCapture()
        let output = try MQTTTestEvents.output(try settings(broker, client: client), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(15) { log.contains("expired on") }, log.all.joined(separator: "\n") + "\n" + broker.log)
        let line = try XCTUnwrap(log.all.first { $0.contains("expired on") })
        XCTAssertTrue(line.contains("mqtt: cannot connect to broker 127.0.0.1:\(broker.port): TLS with broker"), line)
        XCTAssertTrue(line.contains("the client certificate mqtt-tls-cert \(client.cert) (/CN=kiosk-1) expired on 2020-02-01T00:00:00.000Z "
                                    + "(the broker refuses it)"), line)
        XCTAssertFalse(output.link.connected)
    }

    /// The broker's certificate is for another name: the host name check refuses it.
    func testABrokerCertificateForAnotherHostIsRefused() throws {
        let wrong = try ca.issue("server-other", commonName: "other", subjectAltName: "DNS:other.example")
        let broker = try tlsBroker(serverCert: wrong)
        let client = try ca.issue("kiosk-1", commonName: "kiosk-1")
        let log = LogCapture()
        let output = try MQTTTestEvents.output(try settings(broker, client: client), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(15) { log.contains("certificate verify failed") }, log.all.joined(separator: "\n"))
        XCTAssertFalse(output.link.connected)
    }
}

/// mqtt-username and mqtt-password-file against a broker with a mosquitto_passwd file.
final class MQTTPasswordTests: XCTestCase {
    func testUserAndPasswordFileAreAcceptedAndAWrongPasswordIsRefusedWithoutShowingIt() throws {
        let library = try MosquittoLibrary()
        let dir = try TestFiles.temporaryDirectory()
        let passwd = Process()
        passwd.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_passwd")
        passwd.arguments = ["-c", "-b", dir + "/passwd", "kiosk-1", "right horse battery"]
        try passwd.run()
        passwd.waitUntilExit()
        XCTAssertEqual(passwd.terminationStatus, 0)
        let broker = try MQTTTestBroker(listener: { port, _ in
            "listener \(port) 127.0.0.1\nallow_anonymous false\npassword_file \(dir)/passwd\n"
        })
        try broker.start()
        let secret = dir + "/mqtt.pass"
        try TestFiles.write("right horse battery\n", to: secret)
        chmod(secret, 0o600)
        var settings = MQTTTestEvents.settings(port: broker.port, spool: dir + "/spool")
        settings.username = "kiosk-1"
        settings.passwordFile = secret
        let log = LogCapture()
        let good = try MQTTTestEvents.output(settings, library: library, log: log)
        XCTAssertTrue(waitUntil(10) { good.link.connected }, "\(good.link)")
        good.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000))

        try TestFiles.write("wrong staple\n", to: secret)
        settings.spool = dir + "/spool2"
        let bad = try MQTTTestEvents.output(settings, library: library, log: log)
        defer { bad.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(10) { log.contains("the broker refused the connection") }, log.all.joined(separator: "\n"))
        let line = try XCTUnwrap(log.all.first { $0.contains("the broker refused the connection") })
        XCTAssertTrue(line.contains("Bad user name or password") || line.contains("Not authorized"), line)
        XCTAssertFalse(log.all.joined().contains("staple") || log.all.joined().contains("horse"), "the password is never logged")
        XCTAssertFalse(bad.link.connected)
    }
}

import Core
@testable import MQTT
import Foundation
import Platform
import Synchronization
import XCTest

/// The reconnection backoff: 1 s doubling to 60 s, reset only after a connection that stayed up.
final class MQTTReconnectTests: XCTestCase {
    /// The next-attempt values an output's link shows, in order, one per wait (sampled until `stop`).
    final class BackoffRecorder: Sendable {
        private let seen = PosixMutex<(values: [Int], last: Int?)>(([], nil))
        private let running = Atomic<Bool>(true)
        private let done = DispatchSemaphore(value: 0)

        init(_ output: MQTTOutput) {
            Thread.detachNewThread { [self] in
                while running.load(ordering: .relaxed) {
                    let now = output.link.retryInSeconds
                    seen.withLock { s in
                        if let v = now, v != s.last { s.values.append(v) }
                        s.last = now
                    }
                    usleep(10_000)
                }
                done.signal()
            }
        }

        var values: [Int] { seen.withLock { $0.values } }

        func stop() {
            running.store(false, ordering: .relaxed)
            done.wait()
        }
    }

    /// Two kiosks configured with the same client id take the session from each other at every connect
    /// (the broker closes the older connection). Each connection is short, so the backoff is not reset:
    /// the waits grow 1, 2, 4 s instead of a 1 Hz loop that republishes status and state each time.
    func testTwoKiosksWithTheSameClientIDBackOffInsteadOfLoopingAt1Hz() throws {
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        let log = LogCapture()
        let a = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool",
                                                                    clientID: "kiosk-dup"), library: library, log: log)
        let b = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool",
                                                                    clientID: "kiosk-dup"), library: library, log: log)
        defer {
            a.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000))
            b.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000))
        }
        let recordA = BackoffRecorder(a), recordB = BackoffRecorder(b)
        XCTAssertTrue(waitUntil(40) { recordA.values.count >= 3 || recordB.values.count >= 3 },
                      "a: \(recordA.values) b: \(recordB.values)\n\(log.all.joined(separator: "\n"))")
        recordA.stop()
        recordB.stop()
        let longest = recordA.values.count >= recordB.values.count ? recordA.values : recordB.values
        XCTAssertEqual(Array(longest.prefix(3)), [1, 2, 4], "consecutive short connections double the wait: a \(recordA.values) b \(recordB.values)")
        // mosquitto 2.0.11 closes the old connection without a DISCONNECT (later versions send reason 142,
        // "Session taken over", which the link detail then shows).
        XCTAssertTrue(broker.log.contains("Client kiosk-dup already connected, closing old connection."), broker.log)
    }

    /// Only a connection that stayed up `stableSeconds` resets the backoff to 1 s.
    func testOnlyALongConnectionResetsTheBackoff() {
        XCTAssertEqual(MQTTSession.stableSeconds, 30)
        XCTAssertEqual(MQTTSession.backoff(current: 16, afterConnectionOf: 31), 1, "a good connection: 1 s again")
        XCTAssertEqual(MQTTSession.backoff(current: 16, afterConnectionOf: 5), 16, "a short one: the backoff goes on")
        XCTAssertEqual(MQTTSession.backoff(current: 16, afterConnectionOf: 0), 16)
        XCTAssertEqual(MQTTSession.backoff(current: 8, afterConnectionOf: nil), 8, "never accepted")
    }

    /// Connections refused (the broker gone) double the wait: 1, 2, 4 s ...
    func testRefusedConnectionsDoubleTheWait() throws {
        XCTAssertEqual(MQTTSession.firstBackoffSeconds, 1)
        XCTAssertEqual(MQTTSession.maxBackoffSeconds, 60)
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool"),
                                                library: library, log: LogCapture())
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(10) { output.link.connected })
        let record = BackoffRecorder(output)
        broker.stop()
        XCTAssertTrue(waitUntil(20) { record.values.count >= 3 }, "\(record.values)")
        record.stop()
        XCTAssertEqual(Array(record.values.prefix(3)), [1, 2, 4], "\(record.values)")
    }
}

import Bench
import Core
import Foundation
import XCTest

/// The MQTT bench functions run (small counts; the figures themselves come from `scangate bench`).
final class MQTTBenchTests: XCTestCase {
    func testTheMQTTBenchMeasuresLatencyAndABurst() throws {
        let report = try BenchMQTT.run(latencySamples: 50, burstEvents: 1000)
        XCTAssertEqual(report.latency.samples.count, 50)
        XCTAssertTrue(report.latency.p50Milliseconds.isFinite && report.latency.p50Milliseconds > 0)
        XCTAssertGreaterThanOrEqual(report.latency.p99Milliseconds, report.latency.p50Milliseconds)
        XCTAssertEqual(report.burst.events, 1000)
        XCTAssertEqual(report.burst.acknowledged, 1000, "every event of the burst reached the broker")
        XCTAssertEqual(report.burst.dropped, 0)
        XCTAssertEqual(report.lines.count, 2)
        print(report.lines.joined(separator: "\n"))
    }
}

import XCTest
@testable import Bench
@testable import Core
import Decoding

/// `BenchOSDP.pollLatency` works end to end (every POLL answered); the figures are `scangate bench`'s,
/// printed here, not asserted (no timing assertions in unit tests).
final class OSDPBenchTests: XCTestCase {
    func testEveryPollIsAnsweredIdleAndWhileFramesDecode() throws {
        let idle = try BenchOSDP.pollLatency(polls: 40, intervalMs: 25)
        XCTAssertEqual(idle.replies, 40)
        let frames = try BenchFrames.render(BenchFrames.traffic, name: "traffic")
        let loaded = try BenchOSDP.pollLatency(polls: 40, intervalMs: 25, decodeFrames: Array(frames.prefix(60)))
        XCTAssertEqual(loaded.replies, 40)
        XCTAssertGreaterThan(loaded.decodes, 0, "frames were decoding during the polls")
        for (label, r) in [("idle", idle), ("decoding", loaded)] {
            for row in BenchOSDP.rows(r, label: label) { print("bench: \(row.name): \(row.measured) [\(row.target)]") }
        }
        print("bench: \(loaded.decodes) frames decoded during the loaded run")
    }
}

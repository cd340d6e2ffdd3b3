import Platform
import XCTest

/// SCANGATE_FAULT=park-at:STEP[:N] is read only in that form; anything else leaves the code inert.
final class FaultParkingTests: XCTestCase {
    func testParkAtIsParsedOnlyForKnownStepsAndCounts() throws {
        let first = try XCTUnwrap(FaultParking.parse("park-at:replay-record-written"))
        XCTAssertEqual(first.step, "replay-record-written")
        XCTAssertEqual(first.count, 1)
        XCTAssertEqual(FaultParking.parse("park-at:replay-compaction-renamed:7")?.count, 7)
        for other in ["", "hang-decode", "clock-unsynchronised", "park-at", "park-at:", "park-at:no-such-step",
                      "park-at:replay-record-synced:0", "park-at:replay-record-synced:-1", "park-at:replay-record-synced:x",
                      "park-at:replay-record-synced:1:2", "PARK-AT:replay-record-synced"] {
            XCTAssertNil(FaultParking.parse(other), other)
        }
    }

    func testOtherStepsAndEarlierArrivalsPassThrough() throws {
        // Parks only at the third arrival at its own step: these all return.
        let parking = try XCTUnwrap(FaultParking.parse("park-at:replay-record-synced:3"))
        parking.reach("replay-record-written")
        parking.reach("replay-record-synced")
        parking.reach("replay-compaction-written")
        parking.reach("replay-record-synced")
    }

    func testInertWithoutTheVariable() {
        // The test process never sets SCANGATE_FAULT (only the child processes of the kill -9 tests do).
        XCTAssertNil(getenv(FaultParking.variable))
        XCTAssertNil(FaultParking.fromEnvironment())
    }
}

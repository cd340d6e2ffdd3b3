import Bench
import XCTest

/// benchCredentials runs every case and produces rows (no timing asserted: the machine is shared).
final class CredentialBenchTests: XCTestCase {
    func testBenchMeasuresEachPassKind() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let figures = try benchCredentials(iterations: 20, storeIterations: 5, storeDirectory: dir)
        XCTAssertEqual(figures.measures.map(\.name), ["credential verify: JWT Ed25519", "credential verify: JWT ES256",
                                                      "credential verify: CWT Ed25519", "credential verify: CWT ES256",
                                                      "credential one-time consume (\(dir))"])
        XCTAssertEqual(figures.measures.map(\.times.count), [20, 20, 20, 20, 5])
        XCTAssertEqual(figures.measures[2].passLength, 172, "a typical one-time CWT pass")
        let list = try XCTUnwrap(figures.statusList)
        XCTAssertEqual(list.entries, 1_000_000)
        XCTAssertEqual([list.decide.count, list.lookup.count], [20, 20])
        // 125,000 bytes of 1% pseudo-random entries deflate to tens of KiB; base64url and the JWT around them.
        XCTAssertTrue((20_000...200_000).contains(list.tokenBytes), "\(list.tokenBytes)")
        XCTAssertEqual(figures.presentations.map(\.name), ["credential verify: presentation, ES256 holder",
                                                           "credential verify: presentation, Ed25519 holder"])
        XCTAssertEqual(figures.presentations.map(\.times.count), [20, 20])
        let rows = figures.rows(zbarPassMilliseconds: 20)
        XCTAssertEqual(rows.count, 11)
        XCTAssertEqual(rows[5].target, "p99 < 0.1x a zbar pass")
        XCTAssertTrue(rows[5].measured.contains("x a zbar pass"), rows[5].measured)
        XCTAssertNotNil(rows[6].pass)
        XCTAssertEqual([list.policyWindows, list.policyDenied, list.decideWithPolicy?.count], [1000, 10_000, 20])
        XCTAssertTrue(rows[9].name.hasPrefix("decide a pass: the list and a site policy of 1000 schedule windows, 10000 denied numbers"), rows[7].name)
        XCTAssertNotNil(rows[9].pass)
        XCTAssertEqual(rows[7].name, "status list of 1000000 entries: read, verify, inflate (\(list.tokenBytes / 1024) KiB token)")
        XCTAssertEqual(rows[8].target, "p99 < 5% of a zbar pass")
        XCTAssertNotNil(rows[8].pass)
        XCTAssertTrue(rows[8].measured.contains("% of zbar"), rows[6].measured)
        XCTAssertTrue(rows[0].measured.hasPrefix("p50 ") && rows[0].measured.contains("% of zbar"), rows[0].measured)
        XCTAssertNil(rows[4].pass)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "the bench store, the list and the policy are removed")
    }
}

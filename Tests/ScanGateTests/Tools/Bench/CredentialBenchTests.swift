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
        let rows = figures.rows(zbarPassMilliseconds: 20)
        XCTAssertEqual(rows.count, 5)
        XCTAssertTrue(rows[0].measured.hasPrefix("p50 ") && rows[0].measured.contains("% of zbar"), rows[0].measured)
        XCTAssertNil(rows[4].pass)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "the bench store is removed")
    }
}

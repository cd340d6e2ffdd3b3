import XCTest
@testable import Core

final class SmokeTests: XCTestCase {
    func testSymbologyNames() {
        XCTAssertEqual(Symbology(name: "QR-Code"), .qr)
    }
}

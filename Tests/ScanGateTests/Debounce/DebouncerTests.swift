import XCTest
import Core
import Debounce
import Platform
import Settings

/// Every report-once rule, on a fake clock: frame times are given explicitly.
final class DebouncerTests: XCTestCase {
    let a = DecodedSymbol(symbology: .qr, data: Array("A".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
    let b = DecodedSymbol(symbology: .qr, data: Array("B".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
    let ean = DecodedSymbol(symbology: .ean13, data: Array("4006381333931".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))

    /// Runs frames at `fps`; `inView(i)` lists what frame i shows; returns (frame, payload) reports.
    func run(_ settings: DebounceSettings = DebounceSettings(), frames: Int, fps: Double = 10,
             _ inView: (Int) -> [DecodedSymbol]) -> [(Int, String)] {
        var d = Debouncer(settings: settings)
        var out: [(Int, String)] = []
        for i in 0..<frames {
            let t = MonotonicInstant(nanoseconds: UInt64(Double(i) / fps * 1e9))
            for s in d.process(time: t, symbols: inView(i)) { out.append((i, String(decoding: s.data, as: UTF8.self))) }
        }
        return out
    }

    func testCodeHeldInViewIsReportedOnce() {
        let r = run(frames: 300) { _ in [self.a] }
        XCTAssertEqual(r.map(\.0), [0])
    }

    func testReturnAfterHoldOffIsReportedAgain() {
        // In view 0-9, gone 10-29 (2 s at 10 fps > 1.5 s hold-off), back at 30.
        let r = run(frames: 40) { i in (i < 10 || i >= 30) ? [self.a] : [] }
        XCTAssertEqual(r.map(\.0), [0, 30])
    }

    func testReturnBeforeHoldOffIsNotReported() {
        // Gone 10-19 (last seen t=0.9 s, back at t=2.0 s: 1.1 s < 1.5 s).
        let r = run(frames: 40) { i in (i < 10 || i >= 20) ? [self.a] : [] }
        XCTAssertEqual(r.map(\.0), [0])
    }

    func testDifferentCodeIsReportedAtOnce() {
        let r = run(frames: 20) { i in i < 5 ? [self.a] : [self.b] }
        XCTAssertEqual(r.map(\.0), [0, 5])
        XCTAssertEqual(r.map(\.1), ["A", "B"])
    }

    func testTwoCodesInViewAreEachReportedOnceWithoutABALoop() {
        // Alternating reads of two codes that are both in view must not loop A-B-A.
        let r = run(frames: 100) { i in i % 2 == 0 ? [self.a] : [self.b] }
        XCTAssertEqual(r.map(\.1), ["A", "B"])
        let both = run(frames: 50) { _ in [self.a, self.b] }
        XCTAssertEqual(both.map(\.1), ["A", "B"])
    }

    func testOneDimensionalCodesNeedTwoFramesInARow() {
        let once = run(frames: 10) { i in i == 3 ? [self.ean] : [] }
        XCTAssertTrue(once.isEmpty, "a single 1D read is not confirmed")
        let apart = run(frames: 10) { i in i == 3 || i == 5 ? [self.ean] : [] }
        XCTAssertTrue(apart.isEmpty, "two reads that are not in a row are not confirmed")
        let twice = run(frames: 10) { i in i == 3 || i == 4 ? [self.ean] : [] }
        XCTAssertEqual(twice.map(\.0), [4])
    }

    func testConfirmationsAreConfigurable() {
        var s = DebounceSettings()
        s.confirmations2D = 3
        let r = run(s, frames: 10) { _ in [self.a] }
        XCTAssertEqual(r.map(\.0), [2])
    }

    func testHoldOffIsConfigurable() {
        var s = DebounceSettings()
        s.holdOffMs = 500
        let r = run(s, frames: 40) { i in (i < 10 || i >= 20) ? [self.a] : [] }
        XCTAssertEqual(r.map(\.0), [0, 20])
    }

    func testSameBytesDifferentSymbologyAreDifferentCodes() {
        let c128 = DecodedSymbol(symbology: .code128, data: Array("A".utf8), bounds: a.bounds)
        var s = DebounceSettings()
        s.confirmations1D = 1
        let r = run(s, frames: 5) { _ in [self.a, c128] }
        XCTAssertEqual(r.count, 2)
    }

    func testForgottenCodesDoNotAccumulate() {
        var d = Debouncer(settings: DebounceSettings())
        for i in 0..<1000 {
            let t = MonotonicInstant(nanoseconds: UInt64(i) * 100_000_000)
            let s = DecodedSymbol(symbology: .qr, data: Array("code-\(i)".utf8), bounds: a.bounds)
            _ = d.process(time: t, symbols: [s])
        }
        XCTAssertLessThanOrEqual(d.trackedCount, 16)
    }
}

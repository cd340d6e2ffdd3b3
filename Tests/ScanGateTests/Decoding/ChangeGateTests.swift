import XCTest
import Core
import Decoding
import Platform

final class CountingDecoder: Decoder {
    var calls = 0
    func decode(_ frame: Frame) -> [DecodedSymbol] {
        calls += 1
        return frame.luma[0] == 255 ? [DecodedSymbol(symbology: .qr, data: [1], bounds: Rect(x: 0, y: 0, w: 1, h: 1))] : []
    }
}

final class ChangeGateTests: XCTestCase {
    /// A mid-grey scene with deterministic sensor noise of ±`noise` levels.
    func scene(_ seq: UInt64, noise: Int = 4, patch: (x: Int, y: Int, size: Int)? = nil, blurred: Bool = false) -> Frame {
        var state: UInt64 = 0x9E3779B97F4A7C15 &* (seq + 1)
        var luma = [UInt8](repeating: 0, count: 640 * 480)
        for i in 0..<luma.count {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            luma[i] = UInt8(128 + Int(state % UInt64(2 * noise + 1)) - noise)
        }
        if let p = patch {
            // A checkerboard of 4-px modules (like a small code), or its blurred version (flat grey).
            for y in p.y..<(p.y + p.size) {
                for x in p.x..<(p.x + p.size) {
                    luma[y * 640 + x] = blurred ? 128 : (((x / 4) + (y / 4)) % 2 == 0 ? 20 : 235)
                }
            }
        }
        return Frame(width: 640, height: 480, sequence: seq, captureTime: MonotonicInstant(nanoseconds: seq), luma: luma)
    }

    func testStaticNoisySceneIsDecodedOnlyOnForcedRescans() {
        let inner = CountingDecoder()
        let gated = GatedDecoder(inner, rescanEvery: 10)
        for i in 0..<100 { _ = gated.decode(scene(UInt64(i))) }
        XCTAssertEqual(inner.calls, 10, "first frame, then one forced rescan every 10 frames")
    }

    func testSmallCodeAppearingIsDecodedInItsFirstFrame() {
        let inner = CountingDecoder()
        let gated = GatedDecoder(inner, rescanEvery: 1000)
        _ = gated.decode(scene(0))
        _ = gated.decode(scene(1))
        XCTAssertEqual(inner.calls, 1)
        _ = gated.decode(scene(2, patch: (300, 200, 48)))
        XCTAssertEqual(inner.calls, 2, "a 48x48 px code appearing is a change")
    }

    func testCodeComingIntoFocusIsAChange() {
        let inner = CountingDecoder()
        let gated = GatedDecoder(inner, rescanEvery: 1000)
        _ = gated.decode(scene(0, patch: (300, 200, 64), blurred: true))
        _ = gated.decode(scene(1, patch: (300, 200, 64), blurred: true))
        XCTAssertEqual(inner.calls, 1)
        _ = gated.decode(scene(2, patch: (300, 200, 64), blurred: false))
        XCTAssertEqual(inner.calls, 2, "same mean, sharper edges: decoded")
    }

    func testSkippedFramesRepeatTheLastResultSoAHeldCodeStaysInView() {
        let inner = CountingDecoder()
        let gated = GatedDecoder(inner, rescanEvery: 1000)
        var f = scene(0).luma
        f[0] = 255
        let held = Frame(width: 640, height: 480, sequence: 0, captureTime: MonotonicInstant(nanoseconds: 0), luma: f)
        XCTAssertEqual(gated.decode(held).count, 1)
        XCTAssertEqual(gated.decode(held).count, 1)
        XCTAssertEqual(inner.calls, 1)
    }
}

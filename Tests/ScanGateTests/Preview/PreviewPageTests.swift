#if canImport(Glibc)
import Glibc
#endif
import Core
import Foundation
import Images
import Platform
import XCTest

/// Issue 26's page: headless Chromium (Debian's `chromium`) loads `scangate preview`'s page from a daemon
/// on the simulated camera with a QR code at a known place; the screenshot shows the frame at its natural
/// size at the page's top left with the code's corners outlined in red where the daemon found them. Then
/// Chromium exits and the preview's client count goes back to 0.
final class PreviewPageTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else {
            throw XCTSkip("chromium is not installed (scripts/install-deps test)")
        }
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testChromiumShowsTheCodeOutlinedWhereItIsAndTheClientCountReturnsToZero() throws {
        let preview = try PreviewUnderTest(dir: dir, size: "640x480", payload: "PAGE-TEST", at: "240,150", module: 5)
        defer { preview.stop() }
        // Where the daemon found the code (the view's corners, in frame pixels).
        var corners: [[Int]] = []
        XCTAssertTrue(waitUntil(10) {
            guard let a = preview.get("/view.json"), a.status == 200,
                  let json = try? JSONSerialization.jsonObject(with: Data(a.body)) as? [String: Any],
                  let view = json["view"] as? [String: Any], let codes = view["codes"] as? [[String: Any]],
                  let c = codes.first?["corners"] as? [[Int]], c.count == 4 else { return false }
            corners = c
            return true
        }, "the view has the code")
        XCTAssertEqual(preview.clients(), 0, "no stream before the page opens")

        let shot = dir + "/page.png"
        let run = try TestProcess.run("/usr/bin/chromium", [
            "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run", "--user-data-dir=\(dir)/chromium",
            "--force-device-scale-factor=1", "--hide-scrollbars", "--window-size=1000,800", "--screenshot=\(shot)",
            "http://127.0.0.1:\(preview.port)/",
        ], timeout: 60, environment: ["HOME": dir])
        XCTAssertEqual(run.status, 0, run.stderr)
        let picture = try PNGCodec.decodeRGB(Array(try Data(contentsOf: URL(fileURLWithPath: shot))), name: shot)
        XCTAssertGreaterThanOrEqual(picture.width, 640)
        func rgb(_ x: Int, _ y: Int) -> (Int, Int, Int) {
            let i = (y * picture.width + x) * 3
            return (Int(picture.pixels[i]), Int(picture.pixels[i + 1]), Int(picture.pixels[i + 2]))
        }
        func isRed(_ x: Int, _ y: Int) -> Bool {
            guard x >= 0, y >= 0, x < picture.width, y < picture.height else { return false }
            let (r, g, b) = rgb(x, y)
            return r > 150 && g < 100 && b < 100
        }
        func redNear(_ x: Int, _ y: Int, _ d: Int = 3) -> Bool {
            (-d...d).contains { dx in (-d...d).contains { dy in isRed(x + dx, y + dy) } }
        }
        // The frame is drawn at its natural size at the top left: page pixel = frame pixel.
        let points = corners.map { Point(x: $0[0], y: $0[1]) }
        for (i, a) in points.enumerated() {
            let b = points[(i + 1) % 4]
            XCTAssertTrue(redNear(a.x, a.y), "red at corner \(a)")
            for t in [1, 2, 3] {
                let x = a.x + (b.x - a.x) * t / 4, y = a.y + (b.y - a.y) * t / 4
                XCTAssertTrue(redNear(x, y), "red along the edge at \(x),\(y)")
            }
        }
        // And nowhere else in the frame: the outline is where the code is, not merely somewhere.
        let xs = points.map(\.x), ys = points.map(\.y)
        let box = (x0: (xs.min() ?? 0) - 6, x1: (xs.max() ?? 0) + 6, y0: (ys.min() ?? 0) - 6, y1: (ys.max() ?? 0) + 6)
        var stray = 0
        for y in 0..<480 {
            for x in 0..<640 where !(x >= box.x0 && x <= box.x1 && y >= box.y0 && y <= box.y1) && isRed(x, y) { stray += 1 }
        }
        XCTAssertEqual(stray, 0, "red pixels away from the code")
        // The stream's image is there (the frame's grey background), not a broken image.
        let (r, g, b) = rgb(20, 20)
        XCTAssertTrue(abs(r - g) < 12 && abs(g - b) < 12, "the frame's background is grey at 20,20: \(r),\(g),\(b)")

        XCTAssertTrue(preview.preview.stderr.contains { $0.contains("a client started watching (1 now)") }, preview.preview.stderr.joined(separator: "\n"))
        // Chromium has exited: the stream's connection is gone and the count returns to 0.
        XCTAssertTrue(waitUntil(10, failure: "clients back to 0: \(preview.preview.stderr)") { preview.clients() == 0 })
        XCTAssertTrue(waitUntil(5) { preview.preview.stderr.contains { $0.contains("a client stopped watching (0 now)") } })
        XCTAssertEqual(preview.stop(), 0, "SIGTERM: a clean stop")
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
@testable import Credentials
import Foundation
import Images
@testable import Pipeline
import Platform
@testable import Service
import Simulator
import XCTest

/// Issue 26's first slice: the running daemon keeps its newest frame and the decoder's codes;
/// `status --json` has the figures (`view`), `status --snapshot FILE.png` the frame with the overlay,
/// `status --snapshot -` terminal art. One daemon on a simulated camera holding one QR code in view.
final class StatusSnapshotTests: XCTestCase {
    static let scenarioText = """
        size 320x240
        fps 20
        frames 100000
        code qr "HELLO-SNAP" frames 0- at 100,60 module 4
        """

    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The scenario has no noise: every frame is the renderer's frame 0.
    func renderedFrame() throws -> [UInt8] {
        let scenario = try ScenarioParser.parse(text: Self.scenarioText, name: "snap.scenario",
                                                defaults: .init(width: 320, height: 240, fps: 20))
        return try ScenarioRenderer(scenario: scenario).render(frame: 0)
    }

    func status(_ socket: String, _ args: [String]) throws -> ScangateProcess.Result {
        try ScangateProcess.run(["status", "--status-socket", socket] + args, timeout: 30)
    }

    func testTheSnapshotIsTheFrameWithTheCodesOutlineAndTheFiguresAreInTheJSON() throws {
        let scenario = dir + "/snap.scenario", socket = dir + "/status.sock"
        try TestFiles.write(Self.scenarioText, to: scenario)
        let daemon = try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--status-socket", socket])
        defer { daemon.stop() }
        XCTAssertTrue(waitUntil(20) { daemon.stdout.contains { $0.contains("HELLO-SNAP") } }, daemon.stderr.joined(separator: "\n"))

        // status --json: the view, once a decoded frame with the code is in it.
        var view: [String: Any] = [:]
        XCTAssertTrue(waitUntil(10) {
            guard let run = try? status(socket, ["--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: Any],
                  let v = json["view"] as? [String: Any], (v["codes"] as? [Any])?.count == 1, v["fps"] is Double else { return false }
            view = v
            return true
        }, "a view with the code: \(daemon.stderr)")
        let expected = try renderedFrame()
        let mean = Double(expected.reduce(0) { $0 + Int($1) }) / Double(expected.count)
        XCTAssertEqual(try XCTUnwrap(view["mean_luma"] as? Double), mean, accuracy: 1)
        let histogram = try XCTUnwrap(view["histogram"] as? [Int])
        XCTAssertEqual(histogram.count, 16)
        XCTAssertEqual(histogram.reduce(0, +), 320 * 240)
        XCTAssertGreaterThan(try XCTUnwrap(view["sharpness"] as? Double), 0)
        XCTAssertGreaterThan(try XCTUnwrap(view["fps"] as? Double), 0)
        let code = try XCTUnwrap((view["codes"] as? [[String: Any]])?.first)
        XCTAssertEqual(code["symbology"] as? String, "QR-Code")
        XCTAssertEqual(code["payload"] as? String, "HELLO-SNAP", "no signed passes here: the payload the outputs showed")
        let corners = try XCTUnwrap(code["corners"] as? [[Int]]).map { Point(x: $0[0], y: $0[1]) }
        XCTAssertEqual(corners.count, 4)
        // The corners lie inside the code's patch (its quiet zone around it).
        let box = try ScenarioRenderer(scenario: ScenarioParser.parse(text: Self.scenarioText, name: "s",
                                                                      defaults: .init(width: 320, height: 240, fps: 20))).box(ofCode: 0)
        for c in corners {
            XCTAssertTrue(c.x > box.x && c.x < box.x + box.w && c.y > box.y && c.y < box.y + box.h, "\(c) in \(box)")
        }

        // status --snapshot F.png: the frame, grey and untouched wherever nothing is drawn, the outline red
        // at the corners and along the edges, the panel below.
        let png = dir + "/view.png"
        let shot = try status(socket, ["--snapshot", png])
        XCTAssertEqual(shot.status, 0, shot.stderr)
        XCTAssertEqual(shot.stderr, "")
        let picture = try PNGCodec.decodeRGB(Array(try Data(contentsOf: URL(fileURLWithPath: png))), name: png)
        XCTAssertEqual(picture.width, 320)
        XCTAssertEqual(picture.height, 240 + 40)
        func rgb(_ x: Int, _ y: Int) -> [UInt8] { Array(picture.pixels[((y * 320 + x) * 3)..<((y * 320 + x) * 3 + 3)]) }
        var grey = 0, differing = 0
        for y in 0..<240 {
            for x in 0..<320 {
                let p = rgb(x, y)
                guard p[0] == p[1], p[1] == p[2] else { continue }
                grey += 1
                if p[0] != expected[y * 320 + x] { differing += 1 }
            }
        }
        XCTAssertEqual(differing, 0, "every pixel the overlay left is the frame's")
        XCTAssertGreaterThan(grey, 320 * 240 * 95 / 100)
        let red: [UInt8] = [255, 0, 0]
        for (i, a) in corners.enumerated() {
            let b = corners[(i + 1) % 4]
            XCTAssertEqual(rgb(a.x, a.y), red, "corner \(a)")
            for t in [1, 2, 3] {   // along the edge to the next corner
                let x = a.x + (b.x - a.x) * t / 4, y = a.y + (b.y - a.y) * t / 4
                XCTAssertTrue((-1...1).contains { dx in (-1...1).contains { dy in rgb(x + dx, y + dy) == red } }, "edge at \(x),\(y)")
            }
        }
        XCTAssertFalse((0..<320).contains { x in rgb(x, 240 + 20)[0] == rgb(x, 240 + 20)[2] && rgb(x, 240 + 20)[1] == rgb(x, 240 + 20)[2] },
                       "the panel is drawn in colours, not the frame's grey")

        // status --snapshot -: terminal art, the figures and the code.
        let art = try status(socket, ["--snapshot", "-"])
        XCTAssertEqual(art.status, 0, art.stderr)
        XCTAssertTrue(art.stdoutText.contains("█") || art.stdoutText.contains("▀"), art.stdoutText)
        XCTAssertTrue(art.stdoutLines.contains { $0.hasPrefix("QR-Code at ") && $0.hasSuffix(": HELLO-SNAP") }, art.stdoutText)
        XCTAssertTrue(art.stdoutText.contains("mean luma"), art.stdoutText)
        XCTAssertTrue(art.stdoutLines.count < 80, "downscaled: \(art.stdoutLines.count) lines")

        XCTAssertEqual(daemon.stop(), 0)
    }

    /// With signed passes on, every payload is a possible pass: the view shows its fingerprint, as stdout
    /// does, and the token itself appears nowhere.
    func testWithSignedPassesTheViewShowsOnlyTheFingerprint() throws {
        let scenario = dir + "/snap.scenario", socket = dir + "/status.sock"
        try TestFiles.write(Self.scenarioText, to: scenario)
        let jwks = try CredentialFixtures.writeJWKS([("gate", try PrivateKey.generate(.ed25519))], in: dir)
        let daemon = try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--status-socket", socket, "--credential-format", "any",
                                          "--credential-keys", jwks, "--credential-require-synced-clock=no"])
        defer { daemon.stop() }
        XCTAssertTrue(waitUntil(20) { daemon.stdout.contains { $0.contains("\"seq\":1") } }, daemon.stderr.joined(separator: "\n"))
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(daemon.stdout[0].utf8)) as? [String: Any])
        let fingerprint = try XCTUnwrap(event["data"] as? String)
        XCTAssertFalse(fingerprint.contains("HELLO-SNAP"))
        var json = ""
        XCTAssertTrue(waitUntil(10) {
            guard let run = try? status(socket, ["--json"]), run.status == 0, run.stdoutText.contains("\"symbology\":\"QR-Code\"") else { return false }
            json = run.stdoutText
            return true
        }, "a view with the code: \(daemon.stderr)")
        XCTAssertFalse(json.contains("HELLO-SNAP"), json)
        XCTAssertTrue(json.contains(JSONText.string(fingerprint)), json)
        let art = try status(socket, ["--snapshot", "-"])
        XCTAssertEqual(art.status, 0, art.stderr)
        XCTAssertFalse(art.stdoutText.contains("HELLO-SNAP"), art.stdoutText)
        XCTAssertTrue(art.stdoutLines.contains { $0.hasPrefix("QR-Code at ") && $0.hasSuffix(": " + fingerprint) }, art.stdoutText)
        XCTAssertEqual(daemon.stop(), 0)
    }

    func testABadSnapshotFileIsOneLineAndExit2() throws {
        let missing = dir + "/no-such-dir/view.png"
        let run = try ScangateProcess.run(["status", "--status-socket", dir + "/status.sock", "--snapshot", missing], timeout: 30)
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains(missing), run.stderr)
        let both = try ScangateProcess.run(["status", "--status-socket", dir + "/status.sock", "--snapshot", "-", "--json"], timeout: 30)
        XCTAssertEqual(both.status, 2, both.stderr)
        // A good file but no daemon: exit 1, naming the socket, and no file written.
        let none = try ScangateProcess.run(["status", "--status-socket", dir + "/status.sock", "--snapshot", dir + "/v.png"], timeout: 30)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains(dir + "/status.sock"), none.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/v.png"))
    }

    // MARK: - The pieces

    func testFiguresOfAFlatAndABusyFrame() {
        let flat = FrameFigures.measure(luma: [UInt8](repeating: 100, count: 64 * 48), width: 64, height: 48)
        XCTAssertEqual(flat.meanLuma, 100)
        XCTAssertEqual(flat.histogram[6], 64 * 48)
        XCTAssertEqual(flat.sharpness, 0)
        let stripes = (0..<(64 * 48)).map { i in UInt8(i % 64 / 8 % 2 == 0 ? 0 : 255) }
        let busy = FrameFigures.measure(luma: stripes, width: 64, height: 48)
        XCTAssertEqual(busy.meanLuma, 127.5)
        XCTAssertEqual(busy.histogram[0], 64 * 48 / 2)
        XCTAssertEqual(busy.histogram[15], 64 * 48 / 2)
        XCTAssertGreaterThan(busy.sharpness, 1000)
    }

    /// The view keeps the frame the source made (the same luma buffer: no copy), and the rate of the last
    /// frames; the decode side's codes show the payload the outputs saw, kept while the code stays in view.
    func testTheLiveViewKeepsTheFrameWithoutACopyAndThePayloadWhileInView() {
        let view = LiveView()
        XCTAssertNil(view.look().frame)
        let luma = [UInt8](repeating: 9, count: 16 * 8)
        for i in 0..<3 {
            view.captured(Frame(width: 16, height: 8, sequence: UInt64(i), captureTime: .init(nanoseconds: 0),
                                dequeuedAt: .init(nanoseconds: UInt64(i) * 50_000_000), luma: luma))
        }
        let look = view.look()
        XCTAssertEqual(look.frame?.sequence, 2)
        XCTAssertEqual(look.frame?.luma.withUnsafeBufferPointer { $0.baseAddress }, luma.withUnsafeBufferPointer { $0.baseAddress })
        XCTAssertEqual(look.framesPerSecond ?? 0, 20, accuracy: 0.001)

        var shown = ShownPayloads()
        let symbol = DecodedSymbol(symbology: .qr, data: Array("TOKEN".utf8), corners: [Point(x: 1, y: 1), Point(x: 9, y: 1),
                                                                                        Point(x: 9, y: 9), Point(x: 1, y: 9)],
                                   content: SymbolContent())
        var event = ReadEvent(seq: 1, wallTimeNanoseconds: 0, symbol: DecodedSymbol(symbology: .qr, data: Array("fp:1234".utf8),
                                                                                    bounds: symbol.bounds),
                              frame: 0, dequeuedAt: .init(nanoseconds: 0), emittedAt: .init(nanoseconds: 0))
        event.payloadConcealed = true
        XCTAssertEqual(shown.codes(for: [symbol], reported: [(symbol, event)]).map(\.payload), ["fp:1234"])
        // Debounced in the next frames: the same text, the decoder's corners (not the concealed box's).
        let next = shown.codes(for: [symbol], reported: [])
        XCTAssertEqual(next.map(\.payload), ["fp:1234"])
        XCTAssertEqual(next.first?.corners, symbol.corners)
        // Gone for a frame, then back but held by the debouncer: no payload, never the raw one.
        XCTAssertEqual(shown.codes(for: [], reported: []).count, 0)
        XCTAssertEqual(shown.codes(for: [symbol], reported: []).map(\.payload), [nil])
    }

    /// The socket's `snapshot` request: a header line and the luma; none before the first frame; a frame
    /// over 4096x4096 is refused.
    func testTheSocketAnswersASnapshotRequest() throws {
        let path = dir + "/run/" + StatusSocket.fileName
        let frame = PosixMutex<(Int, Int)?>(nil)
        let socket = try StatusSocket(path: path, group: nil, provider: { ServiceStatusSocketTests.report() }, snapshot: {
            guard let (w, h) = frame.withLock({ $0 }) else { return nil }
            let view = StatusReport.View(frame: 7, width: w, height: h, framesPerSecond: 20,
                                         figures: FrameFigures(meanLuma: 1, histogram: [UInt64](repeating: 0, count: 16), sharpness: 0),
                                         decodedFrame: 7, codes: [.init(symbology: "QR-Code", corners: [Point(x: 1, y: 2)], payload: nil)], gate: nil)
            return StatusSnapshot(view: view, luma: (0..<(w * h)).map { UInt8(truncatingIfNeeded: $0) })
        }, logger: LogCapture().logger)
        defer { socket.close() }
        XCTAssertTrue(String(decoding: try ask(path, "snapshot\n"), as: UTF8.self).contains("no frame captured yet"))
        frame.withLock { $0 = (6, 4) }
        let shot = try StatusSnapshot(answer: try ask(path, "snapshot\n"))
        XCTAssertEqual(shot.view.frame, 7)
        XCTAssertEqual(shot.view.codes.first?.corners, [Point(x: 1, y: 2)])
        XCTAssertNil(shot.view.codes.first?.payload)
        XCTAssertEqual(shot.luma, (0..<24).map { UInt8($0) })
        frame.withLock { $0 = (4097, 1) }
        XCTAssertTrue(String(decoding: try ask(path, "snapshot\n"), as: UTF8.self).contains("snapshots are at most 4096x4096"))
        XCTAssertTrue(String(decoding: try ask(path, "status\n"), as: UTF8.self).contains("\"status\":\"scanning\""))
    }

    private func ask(_ path: String, _ request: String) throws -> [UInt8] {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        XCTAssertEqual(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)), 0)
        guard StatusSocketAddress.with(path, { connect(fd, $0, $1) }) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }
}

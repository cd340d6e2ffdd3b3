import Core
import Foundation
import Images
import XCTest

/// Every format zxing-cpp adds, through `scangate run` on replayed frames, as a user sees it: the JSON
/// line's `format`, `symbology`, payload, `corners`, `gs1`, `eci` and `charset`. Two sources: a scenario
/// the simulator draws (libqrencode and zxing's writer), rendered to Y4M; and codes Debian's zint
/// draws (an independent encoder), as a folder of frames.
final class ZXingFormatsRunTests: XCTestCase {
    struct Line {
        var object: [String: Any]
        var format: String? { object["format"] as? String }
        var symbology: String? { object["symbology"] as? String }
        var payload: [UInt8]? {
            if let text = object["data"] as? String { return Array(text.utf8) }
            return (object["data_base64"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init)
        }
        var corners: [[Int]]? { object["corners"] as? [[Int]] }
    }

    func run(_ camera: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> [Line] {
        let r = try ScangateProcess.run(["run", "--camera", camera, "--fast", "--symbologies", "all"] + extra, timeout: 120,
                                        file: file, line: line)
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
        return try r.stdoutLines.map { text in
            Line(object: try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)"))
        }
    }

    func testEveryNewFormatFromASimulatedScenarioReplayed() throws {
        let dir = try TestFiles.temporaryDirectory()
        let codes: [(String, String, String)] = [
            ("QRCode", "DARK MODE 42", "invert"),
            ("MicroQRCode", "MQR-7", "module 4"),
            ("DataMatrix", "DM ticket 0042", "module 4"),
            ("Aztec", "AZTEC boarding 17C", "module 4"),
            ("PDF417", "PDF417 licence DL-1234", "module 2"),
            ("Code93", "CODE93-X", "module 2"),
            ("ITF", "00123456", "module 2"),
            ("Codabar", "40156", "module 2"),
        ]
        var lines = ["size 640x480", "fps 10", "frames \(codes.count * 8 + 2)", "noise 2"]
        for (i, c) in codes.enumerated() {
            lines.append("code \(c.0) \"\(c.1)\" frames \(2 + i * 8)-\(5 + i * 8) \(c.2)")
        }
        let scenario = dir + "/formats.scenario"
        try TestFiles.write(lines.joined(separator: "\n") + "\n", to: scenario)
        let y4m = dir + "/formats.y4m"
        let rendered = try ScangateProcess.run(["render", scenario, "--out", y4m], timeout: 120)
        XCTAssertEqual(rendered.status, 0, rendered.stderr)

        let seen = try run("replay:" + y4m)
        XCTAssertEqual(seen.map(\.format), codes.map(\.0), "each code once, in order")
        XCTAssertEqual(seen.map(\.payload), codes.map { Array($0.1.utf8) })
        XCTAssertEqual(seen.map(\.symbology), ["QR-Code", "MicroQRCode", "DataMatrix", "Aztec", "PDF417", "CODE-93", "I2/5", "Codabar"])
        for line in seen {
            XCTAssertEqual(line.corners?.count, 4, "\(line.object)")
            XCTAssertEqual(line.object["gs1"] as? Bool, false)
        }

        // The inverted QR is read only thanks to invert-retry.
        let without = try run("replay:" + y4m, ["--no-invert-retry"])
        XCTAssertEqual(without.map(\.format), Array(codes.map(\.0).dropFirst()))
        // zbar reads the 1D ones and nothing of the 2D ones but QR (and not inverted QR).
        let zbar = try run("replay:" + y4m, ["--decoder", "zbar"])
        XCTAssertEqual(zbar.map(\.format), ["Code93", "ITF", "Codabar"])
    }

    /// zint's codes, one per frame with empty frames between: binary payloads byte-exact, GS1, ECI.
    func testIndependentlyEncodedCodesShowBytesGS1AndECI() throws {
        let dir = try TestFiles.temporaryDirectory()
        let frames = dir + "/frames"
        XCTAssertEqual(mkdir(frames, 0o755), 0)
        let binary: [UInt8] = [0x00, 0xFF, 0x41, 0x80, 0x0A, 0xE9, 0x1B, 0xC3, 0x28]
        let escaped = binary.map { String(format: "\\x%02X", $0) }.joined()
        let codes: [(Symbology, String, [String])] = [
            (.datamatrix, "[01]09501101530003[17]140704[10]AB-123", ["--gs1"]),
            (.qr, "Grüße €", ["--eci=26"]),
            (.datamatrix, escaped, ["--binary", "--esc"]),
            (.aztec, escaped, ["--binary", "--esc"]),
            (.pdf417, escaped, ["--binary", "--esc"]),
            (.microqr, "M4 12345", []),
        ]
        var index = 0
        func write(_ image: LumaImage) throws {
            try ImageFile.write(image, to: String(format: "%@/%03d.pgm", frames, index), format: .pgm)
            index += 1
        }
        let empty = LumaImage(width: 640, height: 480, fill: 200)
        try write(empty)
        for (symbology, data, options) in codes {
            let code = ZintCodes.frame(try ZintCodes.render(symbology, data, options: options))
            for _ in 0..<3 { try write(code) }
            try write(empty)
        }
        let seen = try run("replay:" + frames, ["--fps", "10"])
        XCTAssertEqual(seen.map(\.format), ["DataMatrix", "QRCode", "DataMatrix", "Aztec", "PDF417", "MicroQRCode"])
        guard seen.count == 6 else { return }
        XCTAssertEqual(seen[0].object["gs1"] as? Bool, true)
        XCTAssertEqual(seen[0].object["data"] as? String, "01095011015300031714070410AB-123")
        XCTAssertNil(seen[0].object["eci"])
        XCTAssertEqual(seen[1].object["data"] as? String, "Grüße €")
        XCTAssertEqual(seen[1].object["eci"] as? Int, 26)
        XCTAssertEqual(seen[1].object["charset"] as? String, "UTF-8")
        for line in seen[2...4] {
            XCTAssertNil(line.object["data"], "not UTF-8: carried as base64")
            XCTAssertEqual(line.payload, binary, "\(line.format ?? "") byte-exact")
        }
        XCTAssertEqual(seen[5].payload, Array("M4 12345".utf8))
        // The corners are where zint's DataMatrix was put: centred on the frame.
        let corners = try XCTUnwrap(seen[0].corners)
        XCTAssertTrue(corners.allSatisfy { (200...440).contains($0[0]) && (120...360).contains($0[1]) }, "\(corners)")
    }

    /// A driver licence's PDF417 as zint draws it (an independent encoder), read through `scangate run`:
    /// the JSON line shows the AAMVA fields a kiosk checks, and the payload byte-exact.
    func testADriversLicencePDF417ShowsItsNumberAndExpiry() throws {
        let dir = try TestFiles.temporaryDirectory()
        let frames = dir + "/frames"
        XCTAssertEqual(mkdir(frames, 0o755), 0)
        let payload = AAMVATests.card(version: 10, issuer: "636014",
                                      subfiles: [("DL", ["DAQD1234567", "DCSSAMPLE", "DACALEX", "DBB01151990", "DBA08312030",
                                                         "DAJCA", "DCGUSA", "DCF00/00/0000NNNAN/ANFD/YY"]),
                                                 ("ZC", ["ZCAY"])])
        let escaped = payload.map { $0 < 0x20 || $0 == 0x5C || $0 >= 0x7F ? String(format: "\\x%02X", $0) : String(UnicodeScalar($0)) }.joined()
        let empty = LumaImage(width: 640, height: 480, fill: 200)
        let code = ZintCodes.frame(try ZintCodes.render(.pdf417, escaped, options: ["--binary", "--esc"]))
        for (i, image) in [empty, code, code, code, empty].enumerated() {
            try ImageFile.write(image, to: String(format: "%@/%03d.pgm", frames, i), format: .pgm)
        }
        let seen = try run("replay:" + frames, ["--fps", "10"])
        XCTAssertEqual(seen.map(\.format), ["PDF417"])
        guard let line = seen.first else { return }
        XCTAssertEqual(line.payload, payload, "byte-exact")
        let fields = try XCTUnwrap(line.object["aamva"] as? [String: Any], "\(line.object)")
        XCTAssertEqual(fields["issuer"] as? String, "636014")
        XCTAssertEqual(fields["version"] as? Int, 10)
        XCTAssertEqual(fields["type"] as? String, "DL")
        XCTAssertEqual(fields["number"] as? String, "D1234567")
        XCTAssertEqual(fields["expiry"] as? String, "2030-08-31")
        XCTAssertEqual(fields["jurisdiction"] as? String, "CA")
        XCTAssertEqual(fields["country"] as? String, "USA")
        XCTAssertNil(fields["name"] ?? fields["DCS"] ?? fields["DBB"], "no name or birth date")
    }
}

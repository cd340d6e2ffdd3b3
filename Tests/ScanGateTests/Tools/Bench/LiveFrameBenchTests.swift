import Bench
import Foundation
import XCTest

/// The live-path frames (Tests/LiveFrames) and the bench stage that scores them: the generator makes the
/// same bytes from the same seed, its manifest says what the frames show (checked with the reference
/// decoder, zxing-cpp 3.1.1 from .build/venv), and `scangate bench --only live-frames --json` reports
/// the table a user reads. No timing is asserted.
final class LiveFrameBenchTests: XCTestCase {
    static var scripts: String { TestFiles.repositoryRoot + "/Tests/LiveFrames" }

    /// The categories in the table's order, and their formats (nil: empty scenes).
    static let categories: [(String, String?)] = [
        ("empty", nil), ("qr-centre", "QRCode"), ("qr-offcentre", "QRCode"), ("qr-tilt", "QRCode"),
        ("qr-rotated", "QRCode"), ("qr-blur", "QRCode"), ("qr-lowcontrast", "QRCode"), ("qr-inverted", "QRCode"),
        ("qr-screen", "QRCode"), ("qr-noise", "QRCode"), ("qr-binary", "QRCode"), ("microqr", "MicroQRCode"),
        ("datamatrix-centre", "DataMatrix"), ("datamatrix-offcentre", "DataMatrix"), ("aztec-centre", "Aztec"),
        ("aztec-offcentre", "Aztec"), ("pdf417", "PDF417"), ("ean13", "EAN13"), ("code128", "Code128"),
    ]

    /// Runs a script of Tests/LiveFrames with the project's Python; fails the test (never skips) when the
    /// venv is missing.
    func python(_ script: String, _ args: [String], timeout: TimeInterval = 120,
                file: StaticString = #filePath, line: UInt = #line) throws -> TestProcess.Result {
        guard FileManager.default.isExecutableFile(atPath: PythonPeers.python) else {
            XCTFail("the Python peers are missing: run scripts/python-env (segno, numpy, zxing-cpp from Tests/python-requirements.txt)",
                    file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return try TestProcess.run(PythonPeers.python, [Self.scripts + "/" + script] + args, timeout: timeout, file: file, line: line)
    }

    func generate(perCategory: Int, into dir: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try python("generate.py", [dir, "--per-category", String(perCategory), "--quiet"], file: file, line: line)
        XCTAssertEqual(r.status, 0, "generate.py: \(r.stderr)", file: file, line: line)
    }

    func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    func testTheGeneratorIsDeterministicAndItsManifestSaysWhatTheFramesShow() throws {
        let a = try TestFiles.temporaryDirectory(), b = try TestFiles.temporaryDirectory()
        try generate(perCategory: 4, into: a)
        try generate(perCategory: 4, into: b)
        let manifest = try XCTUnwrap(FileManager.default.contents(atPath: a + "/manifest.json"))
        XCTAssertEqual(manifest, FileManager.default.contents(atPath: b + "/manifest.json"), "same seed, same manifest")
        let m = try json(Array(manifest))
        let frames = try XCTUnwrap(m["frames"] as? [[String: Any]])
        XCTAssertEqual(frames.count, Self.categories.count * 4)
        XCTAssertEqual((m["categories"] as? [[String: Any]])?.map { $0["name"] as? String }, Self.categories.map(\.0))
        for f in frames {
            let name = try XCTUnwrap(f["file"] as? String)
            let pixels = try XCTUnwrap(FileManager.default.contents(atPath: a + "/" + name), name)
            XCTAssertTrue(pixels.starts(with: Array("P5\n640 480\n255\n".utf8)), name)
            XCTAssertEqual(pixels.count, 15 + 640 * 480, name)
            XCTAssertEqual(pixels, FileManager.default.contents(atPath: b + "/" + name), "\(name): same seed, same pixels")
        }
        // A binary payload is there byte-exact (base64), with no text.
        let binary = try XCTUnwrap(frames.first { $0["category"] as? String == "qr-binary" })
        XCTAssertNotNil(Data(base64Encoded: try XCTUnwrap(binary["payload_b64"] as? String)))
        XCTAssertTrue(frames.filter { $0["category"] as? String == "empty" }.allSatisfy { $0["payload_b64"] is NSNull })

        // The reference decoder reads what the manifest says and nothing else, on frames of every category.
        let check = try python("score_reference.py", [a, "--check", "4"])
        XCTAssertEqual(check.status, 0, "the reference read something the manifest does not say: \(check.stdoutText) \(check.stderr)")
        let result = try json(check.stdout)
        XCTAssertEqual(result["mismatches"] as? [String], [])
        let unread = try XCTUnwrap(result["unread"] as? [String])
        XCTAssertGreaterThanOrEqual(result["read"] as? Int ?? 0, 60, "most of the 72 codes read: \(unread)")
        for (category, format) in Self.categories where format != nil {
            XCTAssertLessThan(unread.filter { $0.hasPrefix("frames/\(category)-") }.count, 4,
                              "\(category): at least one frame read, so its encoder's payload is checked")
        }
        // A different N is a different cache key.
        let k4 = try python("generate.py", ["-", "--key", "--per-category", "4"]).stdoutText
        let k5 = try python("generate.py", ["-", "--key", "--per-category", "5"]).stdoutText
        XCTAssertEqual(k4.count, 17)
        XCTAssertNotEqual(k4, k5)
    }

    func testTheBenchStageReportsReadsPerCategoryAsATableAndJSON() throws {
        let dir = try TestFiles.temporaryDirectory()
        try generate(perCategory: 2, into: dir)
        let scored = try python("score_reference.py", [dir, "--repeats", "1"])
        XCTAssertEqual(scored.status, 0, scored.stderr)

        let run = try ScangateProcess.run(["bench", "--only", "live-frames", "--live-frames", dir, "--rounds", "1", "--json"],
                                          timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderr)
        let live = try XCTUnwrap(try json(run.stdout)["live_frames"] as? [String: Any])
        XCTAssertEqual(live["frames"] as? Int, Self.categories.count * 2)
        XCTAssertEqual(live["frames_with_code"] as? Int, (Self.categories.count - 1) * 2)
        let categories = try XCTUnwrap(live["categories"] as? [[String: Any]])
        XCTAssertEqual(categories.map { $0["name"] as? String }, Self.categories.map(\.0))
        XCTAssertEqual(categories.map { $0["format"] as? String }, Self.categories.map(\.1))
        XCTAssertTrue(categories.allSatisfy { $0["frames"] as? Int == 2 })

        let decoders = try XCTUnwrap(live["decoders"] as? [[String: Any]])
        XCTAssertEqual(decoders.map { $0["name"] as? String },
                       ["zbar 0.23", "zxing-cpp 1.4", "scangate zxing", "zxing-cpp 3.1.1"])
        XCTAssertEqual(decoders.map { $0["in_process"] as? Bool }, [true, true, true, false])
        for d in decoders {
            let name = d["name"] as? String ?? "?"
            let reads = try XCTUnwrap(d["reads"] as? [String: Int], name)
            let misreads = try XCTUnwrap(d["misreads"] as? [String: Int], name)
            XCTAssertEqual(Set(reads.keys), Set(Self.categories.map(\.0)), name)
            XCTAssertEqual(misreads["empty"], 0, "\(name): an empty scene read as a code")
            XCTAssertEqual(reads["empty"], 0, name)
            XCTAssertTrue(reads.values.allSatisfy { (0...2).contains($0) }, "\(name): \(reads)")
            XCTAssertEqual(d["reads_total"] as? Int, reads.values.reduce(0, +), name)
            let misreadFiles = try XCTUnwrap(d["misread_files"] as? [String], name)
            XCTAssertLessThanOrEqual(misreadFiles.count, d["misreads_total"] as? Int ?? 0, name)
            XCTAssertFalse(misreadFiles.contains { $0.hasPrefix("frames/empty-") }, name)
            let cpu = try XCTUnwrap(d["cpu_ms_per_frame"] as? [String: Any], name)
            XCTAssertEqual(Set(cpu.keys), ["empty", "code", "all"], name)
            XCTAssertTrue(cpu.values.allSatisfy { $0 is Double || $0 is Int }, "\(name): \(cpu)")
        }
        // What a user checks first: zbar reads none of the formats it does not have, nor a QR in dark mode.
        let zbar = try XCTUnwrap(decoders.first?["reads"] as? [String: Int])
        for category in ["microqr", "datamatrix-centre", "datamatrix-offcentre", "aztec-centre", "aztec-offcentre", "pdf417", "qr-inverted"] {
            XCTAssertEqual(zbar[category], 0, category)
        }
        XCTAssertGreaterThan(zbar["qr-centre"] ?? 0, 0)
        XCTAssertEqual((decoders.first?["cpu_vs_zbar"] as? [String: Any])?["all"] as? Double, 1.0)
        // The reference column is the scorer's own count.
        let reference = try json(Array(try XCTUnwrap(FileManager.default.contents(atPath: dir + "/reference.json"))))
        let referenceReads = try XCTUnwrap(reference["categories"] as? [String: [String: Int]]).mapValues { $0["reads"] ?? -1 }
        XCTAssertEqual(decoders.last?["reads"] as? [String: Int], referenceReads)

        // The picture of it (make bench-chart) is a PNG.
        try TestFiles.write(bytes: run.stdout, to: dir + "/bench.json")
        let chart = try python("chart.py", [dir + "/bench.json", dir + "/read-rate.png"])
        XCTAssertEqual(chart.status, 0, chart.stderr)
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/read-rate.png")?.prefix(8), Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))

        // The table: a row per category, a column per decoder.
        let table = try ScangateProcess.run(["bench", "--only", "live-frames", "--live-frames", dir, "--rounds", "1"], timeout: 300)
        XCTAssertEqual(table.status, 0, table.stderr)
        let lines = table.stdoutLines
        let header = try XCTUnwrap(lines.first { $0.hasPrefix("category ") })
        XCTAssertTrue(header.contains("zbar 0.23") && header.contains("zxing-cpp 3.1.1 *"), header)
        for (category, format) in Self.categories {
            let label = format == nil ? "\(category) (misreads)" : category + " "
            XCTAssertTrue(lines.contains { $0.hasPrefix(label) }, "no row for \(category)")
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("CPU vs zbar 0.23, all frames") && $0.contains("1.00") })
    }

    func testBadFramesDirectoriesExitTwoNamingTheFile() throws {
        let dir = try TestFiles.temporaryDirectory()
        let missing = try ScangateProcess.run(["bench", "--only", "live-frames", "--live-frames", dir + "/none"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertTrue(missing.stderr.contains(dir + "/none/manifest.json"), missing.stderr)

        // The whole bench checks them before its first stage, not minutes later.
        let whole = try ScangateProcess.run(["bench", "--live-frames", dir + "/none"], timeout: 20)
        XCTAssertEqual(whole.status, 2)
        XCTAssertEqual(whole.stderr.split(separator: "\n").count, 1, whole.stderr)
        XCTAssertTrue(whole.stderr.contains(dir + "/none/manifest.json"), whole.stderr)

        try TestFiles.write("{\"width\": 640, \"height\": 480, \"categories\": []}", to: dir + "/manifest.json")
        let empty = try ScangateProcess.run(["bench", "--only", "live-frames", "--live-frames", dir])
        XCTAssertEqual(empty.status, 2)
        XCTAssertTrue(empty.stderr.contains(dir + "/manifest.json: no categories"), empty.stderr)

        try TestFiles.write("""
            {"width": 640, "height": 480, "categories": [{"name": "qr", "format": "QRCode"}],
             "frames": [{"file": "frames/qr-000.pgm", "category": "qr", "payload_b64": "SEk="}]}
            """, to: dir + "/manifest.json")
        let noFrame = try ScangateProcess.run(["bench", "--only", "live-frames", "--live-frames", dir])
        XCTAssertEqual(noFrame.status, 2)
        XCTAssertEqual(noFrame.stderr.split(separator: "\n").count, 1, noFrame.stderr)
        XCTAssertTrue(noFrame.stderr.contains(dir + "/frames/qr-000.pgm"), noFrame.stderr)

        let alone = try ScangateProcess.run(["bench", "--only", "live-frames"])
        XCTAssertEqual(alone.status, 2)
        XCTAssertTrue(alone.stderr.contains("--only live-frames needs --live-frames DIR"), alone.stderr)
    }
}

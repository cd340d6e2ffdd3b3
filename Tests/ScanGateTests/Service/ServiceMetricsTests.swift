import Core
import Foundation
import Platform
@testable import Service
import XCTest

/// The metrics textfile, read by Debian's prometheus-node-exporter (textfile collector), fetched with curl.
final class ServiceMetricsTests: XCTestCase {
    static func snapshot() -> MetricsSnapshot {
        var m = MetricsSnapshot()
        m.framesCaptured = 1000
        m.framesDecoded = 990
        m.framesDropped = 10
        m.reads = [.init(symbology: "QR-Code", verdict: "accepted", count: 12), .init(symbology: "QR-Code", verdict: "rejected", count: 2),
                   .init(symbology: "I2/5", verdict: "accepted", count: 1)]
        m.outputErrors = [.init(output: "serial", count: 3), .init(output: "odd \"name\" \\ with\nnewline", count: 1)]
        for s in [0.0004, 0.012, 0.018, 0.3, 2.0] { m.decodeSeconds.observe(s) }
        m.cameraUp = true
        m.controllerOnline = false
        m.mqttConnected = true
        m.mqttSpoolEvents = 4
        m.mqttSpoolDropped = 0
        m.rejections = [.init(name: "policy-stale", count: 2), .init(name: "revoked", count: 3)]
        m.statusLists = [.init(uri: "https://s/\"1\"", entries: 1024, issuedAt: 1_799_990_000, expiresAt: 1_800_090_000, kept: false)]
        return m
    }

    func testTheTextFormat() {
        let text = PrometheusText.render(Self.snapshot())
        XCTAssertTrue(text.hasSuffix("\n"))
        XCTAssertTrue(text.contains("# HELP scangate_frames_captured_total Frames the camera delivered.\n# TYPE scangate_frames_captured_total counter\nscangate_frames_captured_total 1000\n"))
        XCTAssertTrue(text.contains(#"scangate_reads_total{symbology="I2/5",verdict="accepted"} 1"#))
        XCTAssertTrue(text.contains(#"scangate_output_errors_total{output="odd \"name\" \\ with\nnewline"} 1"#), "label escaping")
        XCTAssertTrue(text.contains(#"scangate_decode_seconds_bucket{le="0.001"} 1"#))
        XCTAssertTrue(text.contains(#"scangate_decode_seconds_bucket{le="0.025"} 3"#), "cumulative")
        XCTAssertTrue(text.contains(#"scangate_decode_seconds_bucket{le="1"} 4"#))
        XCTAssertTrue(text.contains(#"scangate_decode_seconds_bucket{le="+Inf"} 5"#))
        XCTAssertTrue(text.contains("scangate_decode_seconds_count 5\n"))
        XCTAssertTrue(text.contains("scangate_decode_seconds_sum 2.3304\n"))
        XCTAssertTrue(text.contains("scangate_controller_online 0\n"))
        XCTAssertTrue(text.contains("scangate_mqtt_spool_events 4\n"))
        XCTAssertTrue(text.contains(#"scangate_reads_rejected_total{reason="revoked"} 3"#), text)
        XCTAssertTrue(text.contains(#"scangate_status_list_issued_timestamp_seconds{uri="https://s/\"1\"",source="file"} 1799990000"#), text)
        var shared = Self.snapshot()
        shared.passbackSharing = .init(view: "shared", sent: 7, received: 5, applied: 4, waiting: 0, dropped: 0)
        let sharedText = PrometheusText.render(shared)
        XCTAssertTrue(sharedText.contains("scangate_passback_shared 1\n"), sharedText)
        XCTAssertTrue(sharedText.contains("scangate_passback_uses_sent_total 7\n"), sharedText)
        XCTAssertTrue(sharedText.contains(#"scangate_passback_uses_received_total{applied="true"} 4"#), sharedText)
        XCTAssertTrue(sharedText.contains(#"scangate_passback_uses_received_total{applied="false"} 1"#), sharedText)
        XCTAssertFalse(text.contains("scangate_passback"), "not shared: left out")
        var off = MetricsSnapshot()
        off.cameraUp = false
        let offText = PrometheusText.render(off)
        XCTAssertFalse(offText.contains("scangate_mqtt"), "MQTT off: its gauges are left out")
        XCTAssertFalse(offText.contains("scangate_controller_online"))
        XCTAssertFalse(offText.contains("scangate_status_list_"), "no status lists: their gauges are left out")
        XCTAssertEqual(PrometheusText.escapeHelp("a\\b\nc"), "a\\\\b\\nc")
    }

    /// The file is replaced atomically and the last one says the daemon is down.
    func testTheFileIsWrittenAtomicallyAndSaysDownAtClose() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.prom"
        let file = try MetricsTextfile(path: path, intervalSeconds: 0.05, provider: { Self.snapshot() }, logger: LogCapture().logger)
        XCTAssertTrue(waitUntil(5) { file.filesWritten >= 3 })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".prom") }, ["scangate.prom"])
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("scangate_up 1\n"))
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
        file.close()
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("scangate_up 0\n"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
        XCTAssertThrowsError(try MetricsTextfile(path: dir + "/scangate.txt", provider: { Self.snapshot() }, logger: LogCapture().logger)) {
            XCTAssertTrue("\($0)".contains("must end in .prom"), "\($0)")
        }
    }

    /// The stop deadline's last word holds against a write under way (here one blocked in open(2) on a
    /// FIFO put where the temporary file goes, holding the write lock): that write does not leave a
    /// file saying up behind, and no write after the last word says up. (Found by the TSan run: the
    /// periodic write overwrote the deadline's file with scangate_up 1.)
    func testTheStopDeadlinesLastWordHoldsAgainstAWriteUnderWay() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.prom"
        let file = try MetricsTextfile(path: path, intervalSeconds: 3600, provider: { Self.snapshot() }, logger: LogCapture().logger)
        defer { file.close() }
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("scangate_up 1\n"))
        XCTAssertEqual(mkfifo(path + ".tmp", 0o600), 0)
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            try? file.write(Self.snapshot())
            finished.signal()
        }
        writer.start()
        XCTAssertTrue(waitUntil(10) { Self.aThreadWaitsForAFIFOPartner() }, "the write is blocked in open(2)")
        XCTAssertFalse(file.writeDown(), "a write is under way: the last word is left to it")
        let reader = open(path + ".tmp", O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("scangate_up 0\n"), "the write under way left up 1")
        try file.write(Self.snapshot())
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("scangate_up 0\n"), "a write after the last word says up")
    }

    /// The write lock is free: the last word is written at once, from the last snapshot.
    func testTheStopDeadlinesLastWordIsWrittenAtOnceWhenNoWriteIsUnderWay() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.prom"
        let file = try MetricsTextfile(path: path, intervalSeconds: 3600, provider: { Self.snapshot() }, logger: LogCapture().logger)
        defer { file.close() }
        XCTAssertTrue(file.writeDown())
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains("scangate_up 0\n"))
        XCTAssertTrue(text.contains("scangate_frames_captured_total 1000\n"), "the last snapshot's counters")
    }

    static func aThreadWaitsForAFIFOPartner() -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.contains {
            let wchan = try? String(contentsOfFile: "/proc/self/task/\($0)/wchan", encoding: .utf8)
            return wchan?.trimmingCharacters(in: .whitespacesAndNewlines) == "wait_for_partner"
        }
    }

    func testNodeExporterServesTheMetricsAndTheyParse() throws {
        let exporter = "/usr/bin/prometheus-node-exporter"
        guard FileManager.default.isExecutableFile(atPath: exporter) else {
            throw MQTTTestError("prometheus-node-exporter is missing: install it with `scripts/install-deps test`")
        }
        // As README's recipe: the daemon writes in its state directory, the collector's directory holds a symlink.
        let base = try TestFiles.temporaryDirectory()
        let state = base + "/var-lib-scangate-metrics", dir = base + "/node-exporter"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        XCTAssertEqual(symlink(state + "/scangate.prom", dir + "/scangate.prom"), 0)
        let file = try MetricsTextfile(path: state + "/scangate.prom", intervalSeconds: 0.2, provider: { Self.snapshot() },
                                       logger: LogCapture().logger)
        defer { file.close() }
        let port = try FreePort.make()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exporter)
        p.arguments = ["--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
                       "--collector.textfile.directory=\(dir)"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() }
        XCTAssertTrue(waitUntil(15) { FreePort.accepts(port) }, "node exporter listening")

        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-sf", "http://127.0.0.1:\(port)/metrics"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let body = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        XCTAssertEqual(curl.terminationStatus, 0)
        XCTAssertTrue(body.contains("node_textfile_scrape_error 0"), "the collector parsed the file:\n\(body.prefix(3000))")

        // Parse ScanGate's samples as the exporter re-serves them.
        var samples: [String: Double] = [:]
        for line in body.split(separator: "\n") where line.hasPrefix("scangate_") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                XCTFail("not a sample line: \(line)")
                continue
            }
            samples[String(line[..<space])] = value
        }
        XCTAssertEqual(samples["scangate_frames_captured_total"], 1000)
        XCTAssertEqual(samples["scangate_frames_dropped_total"], 10)
        XCTAssertEqual(samples[#"scangate_reads_total{symbology="QR-Code",verdict="rejected"}"#], 2)
        XCTAssertEqual(samples[#"scangate_output_errors_total{output="odd \"name\" \\ with\nnewline"}"#], 1, "escaped labels survive")
        XCTAssertEqual(samples[#"scangate_decode_seconds_bucket{le="+Inf"}"#], 5)
        XCTAssertEqual(samples["scangate_decode_seconds_count"], 5)
        XCTAssertEqual(samples["scangate_camera_up"], 1)
        XCTAssertEqual(samples["scangate_controller_online"], 0)
        XCTAssertEqual(samples["scangate_mqtt_connected"], 1)
        XCTAssertEqual(samples["scangate_mqtt_spool_events"], 4)
        XCTAssertEqual(samples["scangate_up"], 1)
        XCTAssertEqual(samples[#"scangate_reads_rejected_total{reason="policy-stale"}"#], 2, body)
        XCTAssertEqual(samples[#"scangate_status_list_expiry_timestamp_seconds{source="file",uri="https://s/\"1\""}"#], 1_800_090_000, body)
        XCTAssertEqual(samples[#"scangate_status_list_entries{source="file",uri="https://s/\"1\""}"#], 1024, body)
        XCTAssertTrue(body.contains("# TYPE scangate_decode_seconds histogram"))
    }
}

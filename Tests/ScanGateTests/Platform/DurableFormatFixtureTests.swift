@testable import Credentials
import Foundation
@testable import MQTT
import Platform
import XCTest

/// Files that kiosks already hold, built byte by byte from the layouts in docs/durability.md (not with the
/// code that writes them), are still read after an upgrade: the spool's segments, the one-time store and
/// the command ids.
final class DurableFormatFixtureTests: XCTestCase {
    func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) } }
    func be(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).reversed().map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) } }
    func crc(_ b: [UInt8]) -> UInt32 { CRC32.checksum(b) }

    func testTheChecksumIsCRC32() {
        XCTAssertEqual(crc(Array("123456789".utf8)), 0xCBF4_3926)
    }

    /// Segment records: "SGR2" (56-byte header) and the first format "SGR1" (28-byte header), little-endian.
    func testSpoolSegmentsInBothRecordFormatsAreRead() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        XCTAssertEqual(mkdir(dir, 0o750), 0)
        let wall: UInt64 = 1_767_225_600_000_000_000   // 2026-01-01, a set clock
        let bootID = [UInt8](repeating: 0xB7, count: 16)
        var file: [UInt8] = []
        // Record 1, first format: magic, length, number, wall clock, CRC-32 of bytes 4..<24 and the payload.
        let p1 = Array("first".utf8)
        var h1 = Array("SGR1".utf8) + le(UInt64(p1.count), 4) + le(1, 8) + le(wall, 8)
        h1 += le(UInt64(crc(Array(h1[4..<24]) + p1)), 4)
        file += h1 + p1
        // Record 2, the current format: + boot clock, boot id, flags (1 synchronised | 2 boot id known), CRC of 4..<52 + payload.
        let p2 = Array("second".utf8)
        var h2 = Array("SGR2".utf8) + le(UInt64(p2.count), 4) + le(2, 8) + le(wall + 1, 8) + le(5_000, 8) + bootID + le(3, 4)
        h2 += le(UInt64(crc(Array(h2[4..<52]) + p2)), 4)
        file += h2 + p2
        try TestFiles.write(bytes: file, to: dir + "/0000000000000001.seg")
        // The head file: slot 0 = "SGH1", generation 1, first undelivered record 1, CRC of 4..<20.
        var slot = Array("SGH1".utf8) + le(1, 8) + le(1, 8)
        slot += le(UInt64(crc(Array(slot[4..<20]))), 4)
        try TestFiles.write(bytes: slot, to: dir + "/head")

        let spool = try EventSpool(directory: dir, limits: SpoolLimits(maxBytes: 1 << 20, maxAgeNanoseconds: 0),
                                   logger: LogCapture().logger)
        defer { spool.close() }
        XCTAssertEqual(spool.recovery.records, 2)
        XCTAssertEqual(spool.recovery.damaged, 0)
        let records = spool.read(from: nil, maxCount: 10)
        XCTAssertEqual(records.map(\.number), [1, 2])
        XCTAssertEqual(records.map(\.payload), [p1, p2])
        XCTAssertEqual(records[0].spooledAt, Int64(wall))
        XCTAssertEqual(records[1].stamp.bootID?.bytes, bootID)
        XCTAssertEqual(records[1].stamp.boot, 5_000)
    }

    /// One-time store records: "SGO2" (64 bytes) and the first format "SGR1" (32 bytes), big-endian.
    func testOneTimeStoreRecordsInBothFormatsAreRead() throws {
        let path = try TestFiles.temporaryDirectory() + "/replay"
        let now: Int64 = 1_767_225_600
        let k1 = ReplayKey(high: 0x0102_0304_0506_0708, low: 0x1112_1314_1516_1718)
        let k2 = ReplayKey(high: 0x2122_2324_2526_2728, low: 0x3132_3334_3536_3738)
        // First format: magic, exp + leeway + 1, the key, CRC-32 of the first 28 bytes.
        var r1 = Array("SGR1".utf8) + be(UInt64(now + 600), 8) + be(k1.high, 8) + be(k1.low, 8)
        r1 += be(UInt64(crc(r1)), 4)
        // Current format: magic, hold-until, the key, boot id, boot clock at write, boot hold, CRC of the first 60.
        var r2 = Array("SGO2".utf8) + be(UInt64(now + 600), 8) + be(k2.high, 8) + be(k2.low, 8)
        r2 += [UInt8](repeating: 0xB1, count: 16) + be(100, 8) + be(600, 8)
        r2 += be(UInt64(crc(r2)), 4)
        XCTAssertEqual(r1.count, 32)
        XCTAssertEqual(r2.count, 64)
        try TestFiles.write(bytes: r1 + r2, to: path)
        XCTAssertEqual(chmod(path, 0o600), 0)
        let store = try ReplayStore(path: path, clock: TestReplayClock(wall: now).clock)
        XCTAssertEqual(store.entryCount, 2)
        XCTAssertEqual(store.fileRecords, 2)
        XCTAssertEqual(store.consume(k1, holdUntil: now + 600, now: now), .replayed)
        XCTAssertEqual(store.consume(k2, holdUntil: now + 600, now: now), .replayed)
    }

    /// Command ids: one text line per id: id, wall expiry, boot id (or -), boot deadline, CRC-32 (8 hex digits).
    func testCommandIDLinesAreRead() throws {
        let dir = try TestFiles.temporaryDirectory()
        let time = TestClock()
        let expiry = time.wallSeconds + 3600
        let text = "cmd-1 \(expiry) - 0"
        let line = text + " " + String(format: "%08x", crc(Array(text.utf8))) + "\n"
        try TestFiles.write(line, to: dir + "/commands")
        let store = try CommandIDStore(directory: dir, clock: time.clock, logger: LogCapture().logger)
        defer { store.close() }
        XCTAssertEqual(store.loaded.ids, 1)
        XCTAssertEqual(store.loaded.skipped, 0)
        XCTAssertEqual(try store.admit("cmd-1", expires: expiry).get(), .repeated)
    }
}

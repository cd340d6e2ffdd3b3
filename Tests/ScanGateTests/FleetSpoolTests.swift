import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// The on-disk spool alone: durability across reopen, torn tails, the head file, bounds.
final class FleetSpoolTests: XCTestCase {
    func payload(_ n: Int, size: Int = 0) -> [UInt8] { Array("event \(n)".utf8) + [UInt8](repeating: 0x2E, count: size) }

    func open(_ dir: String, log: RecordingLog = RecordingLog(), maxBytes: Int = 1 << 20, maxAgeHours: Int64 = 0,
              segmentBytes: Int? = nil) throws -> EventSpool {
        try EventSpool(directory: dir, limits: SpoolLimits(maxBytes: maxBytes, maxAgeNanoseconds: maxAgeHours * 3_600_000_000_000,
                                                           segmentBytes: segmentBytes), logger: log.logger)
    }

    func readAll(_ spool: EventSpool) -> [SpoolRecord] {
        var out: [SpoolRecord] = []
        var at: SpoolPosition?
        while true {
            let batch = spool.read(from: at, maxCount: 100)
            if batch.isEmpty { return out }
            out += batch
            at = batch.last?.next
        }
    }

    func segmentFiles(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".seg") }.sorted()
    }

    func testCRC32CheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([]), 0)
        XCTAssertEqual(CRC32.checksum(Array("x123456789".utf8)[1...]), 0xCBF4_3926, "a slice")
    }

    func testRecordsSurviveReopenInOrderAndAcknowledgedOnesDoNot() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        var spool: EventSpool? = try open(dir)
        try spool!.append((1...10).map { payload($0) }, wallTime: WallClock.nowNanoseconds())
        let records = readAll(spool!)
        XCTAssertEqual(records.map { String(decoding: $0.payload, as: UTF8.self) }, (1...10).map { "event \($0)" })
        XCTAssertEqual(records.map(\.number), Array(1...10))
        spool!.acknowledge(upTo: records[3].next)
        XCTAssertEqual(spool!.depth.records, 6)
        spool!.close()
        spool = nil

        let log = RecordingLog()
        let again = try open(dir, log: log)
        XCTAssertEqual(again.recovery.records, 6)
        XCTAssertEqual(readAll(again).map(\.number), Array(5...10))
        XCTAssertTrue(log.contains("6 events not yet acknowledged by the broker will be sent again"), log.all.joined(separator: "\n"))
        try again.append([payload(11)], wallTime: WallClock.nowNanoseconds())
        XCTAssertEqual(readAll(again).map(\.number), Array(5...11), "numbers go on after a reopen")
    }

    /// After a crash the head may be behind: what was acknowledged but not yet written to the head file
    /// comes again (duplicates, which consumers drop by id); nothing is lost.
    func testAHeadNotYetWrittenMeansDuplicatesNeverLoss() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0) }, wallTime: WallClock.nowNanoseconds())
        spool.acknowledge(upTo: readAll(spool)[4].next)
        spool.abandon()   // a crash: the head was never written
        let reopened = try open(dir)
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...10))
        reopened.acknowledge(upTo: readAll(reopened)[4].next)
        reopened.persistHead(sync: true)
        reopened.abandon()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), Array(6...10), "a written head holds")
    }

    /// A power cut in the middle of a write leaves a torn record at the end: found by its length or
    /// checksum when the spool opens, cut off with a log line, and the records before it are all there.
    func testTornTailIsDetectedAndCutOff() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0, size: 50) }, wallTime: WallClock.nowNanoseconds())
        spool.abandon()
        let segment = dir + "/" + (try segmentFiles(dir)).first!
        let good = try Data(contentsOf: URL(fileURLWithPath: segment))
        // The first 40 bytes of an 11th record: a header and part of its payload.
        var torn = [UInt8]()
        SpoolFiles.encode(number: 11, time: WallClock.nowNanoseconds(), payload: payload(11, size: 50), into: &torn)
        try (good + Data(torn.prefix(40))).write(to: URL(fileURLWithPath: segment))

        let log = RecordingLog()
        let reopened = try open(dir, log: log)
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...10))
        XCTAssertTrue(log.contains("a torn record at offset \(good.count); 40 bytes cut off"), log.all.joined(separator: "\n"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: segment)).count, good.count, "the file is cut back")
        try reopened.append([payload(11)], wallTime: WallClock.nowNanoseconds())
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...11))
    }

    /// Issue 16 for the spool: a segment that is a symlink (to /dev/zero), a FIFO, or a file over a segment's
    /// size is left alone and said so; opening never blocks or reads without end; a head that is not a regular
    /// file is refused with a line that names it.
    func testForeignFilesInTheSpoolAreNotReadAndBlockNothing() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir, segmentBytes: 64 << 10)
        try spool.append((1...5).map { payload($0) }, wallTime: WallClock.nowNanoseconds())
        spool.abandon()
        XCTAssertEqual(try segmentFiles(dir).count, 1)
        XCTAssertEqual(symlink("/dev/zero", dir + "/" + SpoolFiles.segmentName(1000)), 0)
        XCTAssertEqual(mkfifo(dir + "/" + SpoolFiles.segmentName(2000), 0o600), 0)
        let big = dir + "/" + SpoolFiles.segmentName(3000)
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil))
        XCTAssertEqual(truncate(big, off_t(SpoolFiles.maxSegmentFileBytes + 1)), 0, "sparse: no disk used")

        let log = RecordingLog()
        let reopened = try open(dir, log: log, segmentBytes: 64 << 10)
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...5), "our records are all there")
        let notes = log.all.joined(separator: "\n")
        XCTAssertTrue(log.contains("\(SpoolFiles.segmentName(1000)) is not a regular file"), notes)
        XCTAssertTrue(log.contains("\(SpoolFiles.segmentName(2000)) is not a regular file"), notes)
        XCTAssertTrue(log.contains("\(SpoolFiles.segmentName(3000)) is \(SpoolFiles.maxSegmentFileBytes + 1) bytes, over a segment's"), notes)
        reopened.abandon()

        let other = try TestFiles.temporaryDirectory() + "/spool"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        XCTAssertEqual(mkfifo(other + "/head", 0o600), 0)
        XCTAssertThrowsError(try open(other)) { error in
            XCTAssertTrue("\(error)".contains("\(other)/head is not a regular file"), "\(error)")
        }
    }

    func testAFlippedBitIsCaughtByTheChecksum() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...6).map { payload($0, size: 20) }, wallTime: WallClock.nowNanoseconds())
        let records = readAll(spool)
        let offsetOf4 = try XCTUnwrap(records.first { $0.number == 3 }?.next.offset)
        spool.abandon()
        let path = dir + "/" + (try segmentFiles(dir)).first!
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[offsetOf4 + SpoolFiles.headerSize + 2] ^= 0x10   // in record 4's payload
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let log = RecordingLog()
        let reopened = try open(dir, log: log)
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...3), "records after the damage cannot be trusted")
        XCTAssertTrue(log.contains("a record whose checksum does not match at offset \(offsetOf4)"), log.all.joined(separator: "\n"))
    }

    func testATornHeadSlotFallsBackToTheOtherSlot() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0) }, wallTime: WallClock.nowNanoseconds())
        let records = readAll(spool)
        spool.acknowledge(upTo: records[2].next)   // head 4, generation 1 -> slot 1
        spool.persistHead(sync: true)
        spool.acknowledge(upTo: records[5].next)   // head 7, generation 2 -> slot 0
        spool.persistHead(sync: true)
        spool.abandon()
        // Tear the newer slot (0): the older one (head 4) must be used.
        let head = try FileHandle(forUpdating: URL(fileURLWithPath: dir + "/head"))
        try head.seek(toOffset: 10)
        head.write(Data([0xFF, 0xFF, 0xFF]))
        try head.close()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), Array(4...10))
    }

    /// Bounded by size: the oldest go first, each counted; segments behind the head are removed, so disk
    /// use stays near the bound.
    func testSizeBoundDropsOldestFirstAndRemovesSegments() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let log = RecordingLog()
        let spool = try open(dir, log: log, maxBytes: 16 << 10, segmentBytes: 4 << 10)
        for n in 1...200 { try spool.append([payload(n, size: 200)], wallTime: WallClock.nowNanoseconds()) }
        let depth = spool.depth
        let recordSize = SpoolFiles.headerSize + payload(1, size: 200).count
        XCTAssertLessThanOrEqual(depth.bytes, 16 << 10)
        XCTAssertEqual(depth.records, UInt64((16 << 10) / recordSize))
        XCTAssertEqual(depth.droppedFull, 200 - depth.records)
        let numbers = readAll(spool).map(\.number)
        XCTAssertEqual(numbers, Array((200 - Int(depth.records) + 1)...200).map(UInt64.init), "the newest are kept, in order")
        let onDisk = try segmentFiles(dir).reduce(0) { sum, name in
            sum + ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? 0)
        }
        XCTAssertLessThanOrEqual(onDisk, (16 << 10) + (4 << 10) + recordSize, "at most the bound plus one segment")
        XCTAssertTrue(log.contains("dropped the oldest event (record 1,"), log.all.joined(separator: "\n"))
        // Everything acknowledged: only the active segment remains.
        spool.acknowledge(upTo: readAll(spool).last!.next)
        XCTAssertEqual(spool.depth.records, 0)
        XCTAssertEqual(try segmentFiles(dir).count, 1)
        spool.close()
        let reopened = try open(dir, maxBytes: 16 << 10, segmentBytes: 4 << 10)
        XCTAssertEqual(reopened.depth.records, 0)
        try reopened.append([payload(201)], wallTime: WallClock.nowNanoseconds())
        XCTAssertEqual(readAll(reopened).map(\.number), [201])
    }

    /// Bounded by age; a record stamped before the clock was set (a Pi without a battery clock) is kept,
    /// since its age is unknown.
    func testAgeBoundDropsOldRecordsButNotThoseWithAnUnsetClock() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir, maxAgeHours: 1)
        let now = WallClock.nowNanoseconds()
        try spool.append([payload(1)], wallTime: now - 3 * 3_600_000_000_000)
        try spool.append([payload(2)], wallTime: now - 2 * 3_600_000_000_000)
        try spool.append([payload(3)], wallTime: now - 60_000_000_000)
        XCTAssertEqual(spool.expire(now: now), 2)
        XCTAssertEqual(readAll(spool).map(\.number), [3])
        XCTAssertEqual(spool.depth.droppedExpired, 2)
        try spool.append([payload(4)], wallTime: 86_400_000_000_000)   // 1970-01-02: the clock was not set
        spool.acknowledge(upTo: readAll(spool)[0].next)
        XCTAssertEqual(spool.expire(now: now), 0)
        XCTAssertEqual(readAll(spool).map(\.number), [4])
    }

    func testASecondSpoolOnTheSameDirectoryIsRefused() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        XCTAssertThrowsError(try open(dir)) { error in
            XCTAssertTrue("\(error)".contains("in use by another scangate or MQTT output"), "\(error)")
        }
        spool.close()
        XCTAssertNoThrow(try open(dir))
    }

    func testReadingFromAPositionTheHeadPassedReadsFromTheHead() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir, maxBytes: 4 << 10, segmentBytes: 1 << 10)
        try spool.append((1...5).map { payload($0, size: 100) }, wallTime: WallClock.nowNanoseconds())
        let old = readAll(spool)[0].next   // position of record 2
        for n in 6...60 { try spool.append([payload(n, size: 100)], wallTime: WallClock.nowNanoseconds()) }
        let batch = spool.read(from: old, maxCount: 1)
        XCTAssertEqual(batch.first?.number, spool.head.record, "dropped records are skipped, not read from a removed segment")
        XCTAssertGreaterThan(spool.head.record, 2)
    }
}

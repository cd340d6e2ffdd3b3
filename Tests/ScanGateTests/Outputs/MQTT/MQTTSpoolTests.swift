import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// The on-disk spool alone: durability across reopen, torn tails, the head file, bounds.
final class MQTTSpoolTests: XCTestCase {
    func payload(_ n: Int, size: Int = 0) -> [UInt8] { Array("event \(n)".utf8) + [UInt8](repeating: 0x2E, count: size) }

    func open(_ dir: String, log: LogCapture = LogCapture(), maxBytes: Int = 1 << 20, maxAgeHours: Int64 = 0,
              segmentBytes: Int? = nil, clock: SpoolClock = .system()) throws -> EventSpool {
        try EventSpool(directory: dir, limits: SpoolLimits(maxBytes: maxBytes, maxAgeNanoseconds: maxAgeHours * 3_600_000_000_000,
                                                           segmentBytes: segmentBytes), logger: log.logger, clock: clock)
    }

    /// Flips one byte of `path` at `offset`, as bit rot or an outside write would.
    func flipByte(_ path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try XCTUnwrap(try handle.read(upToCount: 1)).first ?? 0
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data([byte ^ 0x10]))
    }

    func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
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
        try spool!.append((1...10).map { payload($0) })
        let records = readAll(spool!)
        XCTAssertEqual(records.map { String(decoding: $0.payload, as: UTF8.self) }, (1...10).map { "event \($0)" })
        XCTAssertEqual(records.map(\.number), Array(1...10))
        spool!.acknowledge(upTo: records[3].next)
        XCTAssertEqual(spool!.depth.records, 6)
        spool!.close()
        spool = nil

        let log = LogCapture()
        let again = try open(dir, log: log)
        XCTAssertEqual(again.recovery.records, 6)
        XCTAssertEqual(readAll(again).map(\.number), Array(5...10))
        XCTAssertTrue(log.contains("6 events not yet acknowledged by the broker will be sent again"), log.all.joined(separator: "\n"))
        try again.append([payload(11)])
        XCTAssertEqual(readAll(again).map(\.number), Array(5...11), "numbers go on after a reopen")
    }

    /// After a crash the head may be behind: what was acknowledged but not yet written to the head file
    /// comes again (duplicates, which consumers drop by id); nothing is lost.
    func testAHeadNotYetWrittenMeansDuplicatesNeverLoss() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0) })
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
        try spool.append((1...10).map { payload($0, size: 50) })
        spool.abandon()
        let segment = dir + "/" + (try segmentFiles(dir)).first!
        let good = try Data(contentsOf: URL(fileURLWithPath: segment))
        // The first 70 bytes of an 11th record: a header and part of its payload.
        var torn = [UInt8]()
        SpoolFiles.encode(number: 11, stamp: SpoolClock.system().stamp(), payload: payload(11, size: 50), into: &torn)
        try (good + Data(torn.prefix(70))).write(to: URL(fileURLWithPath: segment))

        let log = LogCapture()
        let reopened = try open(dir, log: log)
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...10))
        XCTAssertTrue(log.contains("a torn record at offset \(good.count); 70 bytes cut off"), log.all.joined(separator: "\n"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: segment)).count, good.count, "the file is cut back")
        XCTAssertEqual(reopened.depth.droppedDamaged, 0, "a torn write is not damage: those records were never durable")
        try reopened.append([payload(11)])
        XCTAssertEqual(readAll(reopened).map(\.number), Array(1...11))
        reopened.abandon()

        // Only part of a header.
        try (good + Data(torn.prefix(40))).write(to: URL(fileURLWithPath: segment))
        let again = LogCapture()
        XCTAssertEqual(readAll(try open(dir, log: again)).map(\.number), Array(1...10))
        XCTAssertTrue(again.contains("a torn record header at offset \(good.count); 40 bytes cut off"), again.all.joined(separator: "\n"))
    }

    /// Issue 16 for the spool: a segment that is a symlink (to /dev/zero), a FIFO, or a file over a segment's
    /// size is left alone and said so; opening never blocks or reads without end; a head that is not a regular
    /// file is refused with a line that names it.
    func testForeignFilesInTheSpoolAreNotReadAndBlockNothing() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir, segmentBytes: 64 << 10)
        try spool.append((1...5).map { payload($0) })
        spool.abandon()
        XCTAssertEqual(try segmentFiles(dir).count, 1)
        XCTAssertEqual(symlink("/dev/zero", dir + "/" + SpoolFiles.segmentName(1000)), 0)
        XCTAssertEqual(mkfifo(dir + "/" + SpoolFiles.segmentName(2000), 0o600), 0)
        let big = dir + "/" + SpoolFiles.segmentName(3000)
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil))
        XCTAssertEqual(truncate(big, off_t(SpoolFiles.maxSegmentFileBytes + 1)), 0, "sparse: no disk used")

        let log = LogCapture()
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

    /// A flipped byte in record 2 of 4 (bit rot): record 2 is lost, counted as damaged and logged as such;
    /// records 3 and 4 are read (resynchronised at the next valid record), not cut off as a torn tail.
    func testAFlippedByteInTheMiddleLosesOnlyThatRecord() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...4).map { payload($0, size: 20) })
        let records = readAll(spool)
        let offsetOf2 = records[0].next.offset
        spool.abandon()
        let path = dir + "/" + (try segmentFiles(dir)).first!
        let size = fileSize(path)
        try flipByte(path, at: offsetOf2 + SpoolFiles.headerSize + 2)   // in record 2's payload
        let log = LogCapture()
        let reopened = try open(dir, log: log)
        XCTAssertEqual(readAll(reopened).map(\.number), [1, 3, 4], "only the damaged record is lost")
        XCTAssertEqual(readAll(reopened).map { String(decoding: $0.payload.prefix(7), as: UTF8.self) }, ["event 1", "event 3", "event 4"])
        XCTAssertEqual(reopened.depth.droppedDamaged, 1)
        XCTAssertEqual(reopened.depth.records, 3)
        XCTAssertEqual(reopened.recovery.damaged, 1)
        let notes = log.all.joined(separator: "\n")
        XCTAssertTrue(log.contains("a record whose checksum does not match at offset \(offsetOf2)"), notes)
        XCTAssertTrue(log.contains("1 events lost (records 2-2)"), notes)
        XCTAssertFalse(log.contains("cut off"), "not called a torn write: \(notes)")
        XCTAssertEqual(fileSize(path), size, "nothing truncated")
        // Appending goes on after the last record; acknowledging all of them empties the spool.
        try reopened.append([payload(5)])
        let all = readAll(reopened)
        XCTAssertEqual(all.map(\.number), [1, 3, 4, 5])
        reopened.acknowledge(upTo: try XCTUnwrap(all.last).next)
        XCTAssertEqual(reopened.depth.records, 0)
        XCTAssertEqual(reopened.depth.bytes, 0)
        reopened.close()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), [])
    }

    /// Damage in the first record of a segment, and a damaged header: resynchronised the same way.
    func testDamageAtTheStartOfASegmentAndInAHeader() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...6).map { payload($0, size: 30) })
        let records = readAll(spool)
        spool.abandon()
        let path = dir + "/" + (try segmentFiles(dir)).first!
        try flipByte(path, at: 5)                                  // record 1's length
        try flipByte(path, at: records[3].next.offset + 9)         // record 5's number
        let log = LogCapture()
        let reopened = try open(dir, log: log)
        XCTAssertEqual(readAll(reopened).map(\.number), [2, 3, 4, 6], log.all.joined(separator: "\n"))
        XCTAssertEqual(reopened.depth.droppedDamaged, 2)
    }

    /// Damage found while the spool runs (after it was opened): the records already read and in flight
    /// stay in the spool (the head does not move past them), only the damaged one is lost, nothing is
    /// truncated, and appending and reading go on.
    func testDamageFoundWhileRunningKeepsTheRecordsInFlight() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...5).map { payload($0, size: 20) })
        let first = spool.read(from: nil, maxCount: 2)     // 1 and 2: published, not yet acknowledged
        XCTAssertEqual(first.map(\.number), [1, 2])
        let path = dir + "/" + (try segmentFiles(dir)).first!
        let size = fileSize(path)
        try flipByte(path, at: try XCTUnwrap(first.last).next.offset + SpoolFiles.headerSize + 1)   // record 3
        let rest = spool.read(from: try XCTUnwrap(first.last).next, maxCount: 10)
        XCTAssertEqual(rest.map(\.number), [4, 5], "resynchronised after the damaged record")
        XCTAssertEqual(spool.depth.droppedDamaged, 1)
        XCTAssertEqual(spool.head.record, 1, "the head stays at the first record in flight")
        XCTAssertEqual(spool.depth.records, 4)
        XCTAssertEqual(fileSize(path), size, "the active segment is not truncated (an append may be writing to it)")
        try spool.append([payload(6), payload(7)])
        XCTAssertEqual(readAll(spool).map(\.number), [1, 2, 4, 5, 6, 7])
        spool.acknowledge(upTo: first[1].next)
        XCTAssertEqual(spool.depth.records, 4)
        spool.acknowledge(upTo: try XCTUnwrap(readAll(spool).last).next)
        XCTAssertEqual(spool.depth.records, 0)
        XCTAssertEqual(spool.depth.bytes, 0)
        spool.close()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), [], "all acknowledged")
    }

    /// Records of the first format ("SGR1", no boot stamp), as an older scangate left them, are still read
    /// and sent; new records go on after them in the new format.
    func testRecordsOfTheFirstFormatAreStillRead() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var bytes = [UInt8]()
        let wall = WallClock.nowNanoseconds()
        for n in 1...3 { SpoolFiles.encodeLegacy(number: UInt64(n), time: wall, payload: payload(n, size: 5), into: &bytes) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/" + SpoolFiles.segmentName(1)))
        let spool = try open(dir)
        XCTAssertEqual(spool.recovery.records, 3)
        try spool.append([payload(4)])
        let records = readAll(spool)
        XCTAssertEqual(records.map(\.number), [1, 2, 3, 4])
        XCTAssertEqual(records.map { String(decoding: $0.payload.prefix(7), as: UTF8.self) }, (1...4).map { "event \($0)" })
        XCTAssertEqual(records[0].spooledAt, wall)
        XCTAssertNil(records[0].stamp.bootID, "the first format has no boot stamp")
        XCTAssertNotNil(records[3].stamp.bootID)
        spool.close()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), [1, 2, 3, 4], "both formats in one segment after a reopen")
    }

    /// The head's generation goes on from the file after a reopen: a head written after the reopen wins
    /// over the older slot, whatever generation that slot reached before.
    func testTheNewestHeadWinsAcrossReopens() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0) })
        let records = readAll(spool)
        spool.acknowledge(upTo: records[2].next)   // head 4: generation 1, slot 1
        spool.persistHead(sync: true)
        spool.acknowledge(upTo: records[5].next)   // head 7: generation 2, slot 0
        spool.persistHead(sync: true)
        spool.abandon()
        let second = try open(dir)
        XCTAssertEqual(readAll(second).map(\.number), Array(7...10))
        second.acknowledge(upTo: readAll(second)[1].next)   // head 9: generation 3 (slot 1), not 1
        second.persistHead(sync: true)
        second.abandon()
        XCTAssertEqual(readAll(try open(dir)).map(\.number), [9, 10], "the head written last wins")
    }

    func testATornHeadSlotFallsBackToTheOtherSlot() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        try spool.append((1...10).map { payload($0) })
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
        let log = LogCapture()
        let spool = try open(dir, log: log, maxBytes: 16 << 10, segmentBytes: 4 << 10)
        for n in 1...200 { try spool.append([payload(n, size: 200)]) }
        let depth = spool.depth
        let recordSize = SpoolFiles.headerSize + payload(200, size: 200).count   // the records kept: "event 1xx"
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
        try reopened.append([payload(201)])
        XCTAssertEqual(readAll(reopened).map(\.number), [201])
    }

    /// Within a boot, age is the boot clock's: records older than the limit go, and a wall-clock step
    /// forward (a bad battery clock, NTP after fake-hwclock) drops nothing.
    func testAgeWithinABootIsJudgedByTheBootClockNotTheWallClock() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let time = TestClock()
        let spool = try open(dir, maxAgeHours: 1, clock: time.clock)
        try spool.append([payload(1)])
        time.advance(seconds: 3600 - 120)
        try spool.append([payload(2)])
        time.stepWall(seconds: 365 * 86_400)   // a year ahead, all at once
        XCTAssertEqual(spool.expire(), 0, "a forward step alone drops nothing")
        time.advance(seconds: 60)
        try spool.append([payload(3)])
        time.advance(seconds: 121)             // record 1: 1 h 1 s old by the boot clock
        XCTAssertEqual(spool.expire(), 1)
        XCTAssertEqual(readAll(spool).map(\.number), [2, 3])
        XCTAssertEqual(spool.depth.droppedExpired, 1)
        time.stepWall(seconds: -2 * 365 * 86_400)   // and a backward step keeps nothing longer either
        time.advance(seconds: 3600)
        XCTAssertEqual(spool.expire(), 2)
        XCTAssertEqual(readAll(spool).map(\.number), [])
        XCTAssertEqual(spool.depth.droppedExpired, 3)
    }

    /// Across a reboot the boot clocks cannot be compared: the wall clock decides, and only when the record
    /// was stamped with a synchronised clock and the clock is synchronised now.
    func testAgeAcrossARebootNeedsASynchronisedWallClockThenAndNow() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let time = TestClock(synchronized: true)
        let first = try open(dir, maxAgeHours: 1, clock: time.clock)
        try first.append([payload(1)])                     // synchronised
        time.setSynchronized(false)
        time.advance(seconds: 10)
        try first.append([payload(2)])                     // not synchronised
        first.close()

        // Rebooted 3 h later, the clock not yet synchronised (fake-hwclock): nothing can be judged.
        time.reboot(wall: time.wall + 3 * 3_600_000_000_000, synchronized: false)
        var spool = try open(dir, maxAgeHours: 1, clock: time.clock)
        XCTAssertEqual(spool.expire(), 0, "an unsynchronised clock now: kept")
        spool.close()
        // NTP answered: record 1 (synchronised then and now) is 3 h old and goes; record 2's stamp was never
        // synchronised, so its age is unknown and it stays.
        time.setSynchronized(true)
        spool = try open(dir, maxAgeHours: 1, clock: time.clock)
        XCTAssertEqual(spool.expire(), 1)
        XCTAssertEqual(readAll(spool).map(\.number), [2])
        spool.close()
    }

    /// A head record whose age is unknown (stamped before the clock was set, in another boot) does not stop
    /// expiry for the records behind it: records are in spool order, so once a later one is known to be
    /// too old, the unknown ones before it are older still and go too; fresh ones stay.
    func testARecordOfUnknownAgeAtTheHeadDoesNotBlockExpiry() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let time = TestClock(synchronized: false)
        let first = try open(dir, maxAgeHours: 1, clock: time.clock)
        try first.append([payload(1)], wallTime: 86_400_000_000_000)   // 1970-01-02: the clock not set
        time.setSynchronized(true)
        time.advance(seconds: 60)
        try first.append([payload(2)])
        first.close()
        time.reboot(wall: time.wall + 2 * 3_600_000_000_000, synchronized: true)
        let spool = try open(dir, maxAgeHours: 1, clock: time.clock)
        try spool.append([payload(3)])                                    // this boot, fresh
        XCTAssertEqual(spool.expire(), 2, "record 1 goes with record 2, which is known to be 2 h old")
        XCTAssertEqual(readAll(spool).map(\.number), [3])
        XCTAssertEqual(spool.depth.droppedExpired, 2)
        time.advance(seconds: 1800)
        XCTAssertEqual(spool.expire(), 0)
        XCTAssertEqual(readAll(spool).map(\.number), [3])
    }

    func testASecondSpoolOnTheSameDirectoryIsRefused() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir)
        XCTAssertThrowsError(try open(dir)) { error in
            XCTAssertTrue("\(error)".contains("in use by another scangate or MQTT output"), "\(error)")
            XCTAssertEqual((error as? SpoolError)?.lockBusy, true, "said to be the lock, so the output waits for it")
        }
        spool.close()
        XCTAssertNoThrow(try open(dir))
    }

    func testReadingFromAPositionTheHeadPassedReadsFromTheHead() throws {
        let dir = try TestFiles.temporaryDirectory() + "/spool"
        let spool = try open(dir, maxBytes: 4 << 10, segmentBytes: 1 << 10)
        try spool.append((1...5).map { payload($0, size: 100) })
        let old = readAll(spool)[0].next   // position of record 2
        for n in 6...60 { try spool.append([payload(n, size: 100)]) }
        let batch = spool.read(from: old, maxCount: 1)
        XCTAssertEqual(batch.first?.number, spool.head.record, "dropped records are skipped, not read from a removed segment")
        XCTAssertGreaterThan(spool.head.record, 2)
    }
}

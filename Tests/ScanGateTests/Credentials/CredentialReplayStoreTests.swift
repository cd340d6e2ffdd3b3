@testable import Credentials
import Foundation
import Platform
import Synchronization
import XCTest

/// The store's clocks, set by the test: the wall clock and this boot's clock move apart as a clock step would.
final class TestReplayClock: Sendable {
    let wallSeconds: Atomic<Int64>
    let bootSeconds = Atomic<Int64>(100)
    let id: BootID?

    init(wall: Int64, bootID: BootID? = BootID(bytes: Array(repeating: 0xB1, count: 16))) {
        wallSeconds = Atomic(wall)
        id = bootID
    }

    var clock: ReplayClock {
        ReplayClock(boot: { [self] in bootSeconds.load(ordering: .relaxed) }, wall: { [self] in wallSeconds.load(ordering: .relaxed) },
                    bootID: id)
    }

    /// Real time passing: both clocks move.
    func advance(_ seconds: Int64) {
        wallSeconds.add(seconds, ordering: .relaxed)
        bootSeconds.add(seconds, ordering: .relaxed)
    }
}

/// The one-time-use store: durable consumes, torn records, corruption, expiry by both clocks, compaction,
/// a write that fails, two users of one file, records of another boot and of the first format.
final class CredentialReplayStoreTests: XCTestCase {
    var dir = ""
    var path = ""
    let now: Int64 = 1_800_000_000

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        path = dir + "/credential-replay"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func key(_ n: Int) throws -> ReplayKey {
        try ReplayKey.make(format: .jwt, issuer: "site", tokenID: Array("jti-\(n)".utf8))
    }

    func fileBytes() throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    func testConsumeIsRememberedAcrossReopen() throws {
        let store = try ReplayStore(path: path)
        XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .fresh)
        XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .replayed)
        XCTAssertEqual(store.consume(try key(2), holdUntil: now + 60, now: now), .fresh)
        XCTAssertEqual(try fileBytes().count, 2 * ReplayStore.recordSize)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        // A new process (a new store on the same file): both are still consumed.
        let again = try ReplayStore(path: path)
        XCTAssertEqual(again.entryCount, 2)
        XCTAssertEqual(again.consume(try key(1), holdUntil: now + 60, now: now + 1), .replayed)
        XCTAssertEqual(again.consume(try key(2), holdUntil: now + 60, now: now + 1), .replayed)
        XCTAssertEqual(again.consume(try key(3), holdUntil: now + 60, now: now + 1), .fresh)
        // The same jti from another issuer or format is another pass.
        XCTAssertNotEqual(try ReplayKey.make(format: .jwt, issuer: "other", tokenID: Array("jti-1".utf8)), try key(1))
        XCTAssertNotEqual(try ReplayKey.make(format: .cwt, issuer: "site", tokenID: Array("jti-1".utf8)), try key(1))
    }

    func testTornLastRecordIsCutOffAndTheRestLoads() throws {
        do {
            let store = try ReplayStore(path: path)
            for n in 0..<3 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 60, now: now), .fresh) }
        }
        let whole = try fileBytes()
        XCTAssertEqual(whole.count, 3 * ReplayStore.recordSize)
        // A kill -9 or power cut part-way through the fourth record: every prefix of it.
        let fourth = ReplayStore.record(try key(3), holdUntil: now + 60, bootID: nil, bootAt: 0, bootHold: 60)
        for cut in 1...ReplayStore.recordSize {
            var torn = whole + fourth.prefix(cut)
            if cut == ReplayStore.recordSize { torn[torn.count - 1] ^= 0xFF }   // whole but its CRC fails
            try TestFiles.write(bytes: torn, to: path)
            chmod(path, 0o600)
            let store = try ReplayStore(path: path)
            XCTAssertEqual(store.entryCount, 3, "cut at \(cut)")
            XCTAssertEqual(try fileBytes(), whole, "the torn record is cut off (cut at \(cut))")
            XCTAssertEqual(store.consume(try key(0), holdUntil: now + 60, now: now), .replayed)
            XCTAssertEqual(store.consume(try key(3), holdUntil: now + 60, now: now), .fresh, "its read was never accepted")
            XCTAssertEqual(try fileBytes().count, 4 * ReplayStore.recordSize)
        }
    }

    func testDamageBeforeTheLastRecordRefusesToLoad() throws {
        do {
            let store = try ReplayStore(path: path)
            for n in 0..<3 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 60, now: now), .fresh) }
        }
        var bytes = try fileBytes()
        bytes[80] ^= 0x01   // inside the second record
        try TestFiles.write(bytes: bytes, to: path)
        XCTAssertThrowsError(try ReplayStore(path: path)) { error in
            XCTAssertTrue("\(error)".hasPrefix("credential-replay-store \(path): record at byte 64 is damaged"), "\(error)")
        }
        // Zeros where records were (a file system that lost data): also refused.
        try TestFiles.write(bytes: [UInt8](repeating: 0, count: 3 * ReplayStore.recordSize), to: path)
        XCTAssertThrowsError(try ReplayStore(path: path))
    }

    func testUnsafePermissionsAndMissingDirectory() throws {
        try TestFiles.write(bytes: [], to: path)
        chmod(path, 0o622)
        XCTAssertThrowsError(try ReplayStore(path: path)) { XCTAssertTrue("\($0)".contains("mode 0622 lets group or others write it"), "\($0)") }
        XCTAssertThrowsError(try ReplayStore(path: dir + "/no/such/dir/store")) {
            XCTAssertTrue("\($0)".contains("does the directory exist?"), "\($0)")
        }
    }

    func testEntriesExpireByBothClocksAndTheFileIsCompacted() throws {
        let time = TestReplayClock(wall: now)
        let store = try ReplayStore(path: path, clock: time.clock)
        // 600 passes held until now + 10, then 50 that live long.
        for n in 0..<600 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 10, now: now), .fresh) }
        for n in 1000..<1050 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 100_000, now: now), .fresh) }
        XCTAssertEqual(store.fileRecords, 650)
        var before = stat()
        stat(path, &before)
        // 20 s later by both clocks: new consumes prune and compact once expired records dominate.
        time.advance(20)
        let later = now + 20
        XCTAssertEqual(store.consume(try key(0), holdUntil: later + 10, now: later), .replayed,
                       "held until the prune that both clocks allow")
        for n in 2000..<2700 { XCTAssertEqual(store.consume(try key(n), holdUntil: later + 10, now: later), .fresh) }
        var after = stat()
        stat(path, &after)
        XCTAssertNotEqual(after.st_ino, before.st_ino, "compacted into a new file, renamed over the old")
        XCTAssertLessThan(store.fileRecords, 650 + 700)
        XCTAssertEqual(try fileBytes().count, store.fileRecords * ReplayStore.recordSize)
        for n in 1000..<1050 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 100_000, now: later), .replayed) }
        XCTAssertEqual(store.consume(try key(0), holdUntil: later + 10, now: later), .fresh, "dropped by both clocks, so fresh")
        // A reopen: nothing is dropped at load.
        let records = store.fileRecords
        let reopened = try ReplayStore(path: path, clock: time.clock)
        XCTAssertEqual(try fileBytes().count, records * ReplayStore.recordSize, "not compacted at load")
        XCTAssertTrue(reopened.contains(try key(1000)))
        // Consumes once everything expired by both clocks: they prune, and the file is rewritten small.
        time.advance(200_000)
        for n in 5000..<5256 { XCTAssertEqual(reopened.consume(try key(n), holdUntil: now + 300_000, now: now + 200_020), .fresh) }
        XCTAssertEqual(reopened.fileRecords, 256)
        XCTAssertEqual(try fileBytes().count, 256 * ReplayStore.recordSize)
        XCTAssertFalse(reopened.contains(try key(1000)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    /// Issue 19: one read while the wall clock is stepped two days ahead erased 299 of 300 used passes.
    /// The wall clock alone now drops nothing; the boot clock has to agree.
    func testAWallClockSteppedForwardErasesNothing() throws {
        let time = TestReplayClock(wall: now)
        let store = try ReplayStore(path: path, clock: time.clock)
        for n in 0..<300 { XCTAssertEqual(store.consume(try key(n), holdUntil: ReplayStore.holdUntil(expiresAt: now + 3600), now: now), .fresh) }
        // The clock steps two days ahead (a bad NTP server); 300 reads there, enough to prune and compact.
        time.wallSeconds.store(now + 2 * 86_400, ordering: .relaxed)
        let ahead = now + 2 * 86_400
        for n in 1000..<1300 {
            XCTAssertEqual(store.consume(try key(n), holdUntil: ReplayStore.holdUntil(expiresAt: ahead + 3600), now: ahead), .fresh)
        }
        XCTAssertEqual(store.entryCount, 600)
        // Back at the real time, in this process and in a new one: every used pass is still used.
        time.wallSeconds.store(now + 60, ordering: .relaxed)
        let reopened = try ReplayStore(path: path, clock: time.clock)
        for n in 0..<300 {
            XCTAssertEqual(store.consume(try key(n), holdUntil: ReplayStore.holdUntil(expiresAt: now + 3600), now: now + 60), .replayed)
            XCTAssertTrue(reopened.contains(try key(n)), "pass \(n)")
        }
        // Once real time has passed too (both clocks past the hold), the first 300 go at the next prune.
        time.advance(2 * 86_400 + 3600 + 3601)
        for n in 2000..<2256 {
            XCTAssertEqual(store.consume(try key(n), holdUntil: ReplayStore.holdUntil(expiresAt: now + 4 * 86_400), now: now + 3 * 86_400), .fresh)
        }
        XCTAssertFalse(store.contains(try key(0)))
    }

    /// An entry is held past exp by the largest leeway a consumer may apply (3600 s), not the one that
    /// consumed it: a gate with leeway 0 and the daemon with leeway 30 share the file.
    func testTheHoldCoversEveryConsumersLeeway() {
        XCTAssertEqual(ReplayStore.holdUntil(expiresAt: now), now + 3601)
        XCTAssertEqual(ReplayStore.holdUntil(expiresAt: Int64.max - 5), Int64.max)
    }

    /// A record of another boot cannot be judged by this boot's clock: its count starts again at load.
    func testARecordOfAnotherBootStartsItsBootCountAgain() throws {
        let first = TestReplayClock(wall: now, bootID: BootID(bytes: Array(repeating: 0xA1, count: 16)))
        first.bootSeconds.store(50_000, ordering: .relaxed)
        do {
            let store = try ReplayStore(path: path, clock: first.clock)
            XCTAssertEqual(store.consume(try key(1), holdUntil: now + 100, now: now), .fresh)
        }
        // The next boot: its clock starts near 0, the wall clock two days ahead (a battery clock gone wrong).
        let second = TestReplayClock(wall: now + 2 * 86_400, bootID: BootID(bytes: Array(repeating: 0xA2, count: 16)))
        second.bootSeconds.store(5, ordering: .relaxed)
        let store = try ReplayStore(path: path, clock: second.clock)
        for n in 100..<356 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 2 * 86_400 + 100, now: now + 2 * 86_400), .fresh) }
        XCTAssertTrue(store.contains(try key(1)), "kept: this boot's clock has not counted its 100 s")
        second.bootSeconds.store(106, ordering: .relaxed)
        for n in 400..<656 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 2 * 86_400 + 100, now: now + 2 * 86_400), .fresh) }
        XCTAssertFalse(store.contains(try key(1)), "both clocks past its hold")
    }

    /// A file of the first format (32-byte records holding exp + the consumer's leeway + 1) still loads,
    /// each entry held the largest leeway longer; new records are appended in the new format.
    func testAFirstFormatFileIsCarriedOver() throws {
        try TestFiles.write(bytes: ReplayStore.firstFormatRecord(try key(1), now + 31) + ReplayStore.firstFormatRecord(try key(2), now + 31),
                            to: path)
        chmod(path, 0o600)
        let time = TestReplayClock(wall: now)
        let store = try ReplayStore(path: path, clock: time.clock)
        XCTAssertEqual(store.entryCount, 2)
        XCTAssertEqual(store.consume(try key(3), holdUntil: now + 100, now: now), .fresh)
        XCTAssertEqual(try fileBytes().count, 2 * 32 + ReplayStore.recordSize)
        // Past the old expiry and its leeway by both clocks, but not past the largest leeway: still held.
        time.advance(3000)
        for n in 100..<356 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 5000, now: now + 3000), .fresh) }
        XCTAssertTrue(store.contains(try key(1)))
        XCTAssertEqual(store.consume(try key(2), holdUntil: now + 5000, now: now + 3000), .replayed)
        XCTAssertEqual(try ReplayStore(path: path, clock: time.clock).entryCount, 2 + 1 + 256)
    }

    func testAKillDuringCompactionLeavesTheOldFile() throws {
        let time = TestReplayClock(wall: now)
        // A compaction killed before its rename leaves PATH.tmp beside the intact store.
        do {
            let store = try ReplayStore(path: path, clock: time.clock)
            XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .fresh)
        }
        try TestFiles.write(bytes: ReplayStore.record(try key(9), holdUntil: now + 60, bootID: nil, bootAt: 0, bootHold: 60).prefix(20) + [1, 2, 3],
                            to: path + ".tmp")
        let store = try ReplayStore(path: path, clock: time.clock)
        XCTAssertEqual(store.entryCount, 1)
        XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .replayed)
        XCTAssertEqual(store.consume(try key(9), holdUntil: now + 60, now: now), .fresh)
        // The next compaction writes the temp file afresh.
        var s = 0
        for n in 100..<800 { if store.consume(try key(n), holdUntil: now + 1, now: now) == .fresh { s += 1 } }
        XCTAssertEqual(s, 700)
        time.advance(5)
        XCTAssertEqual(store.consume(try key(2000), holdUntil: now + 60, now: now + 5), .fresh)
        for n in 3000..<3300 { XCTAssertEqual(store.consume(try key(n), holdUntil: now + 60, now: now + 5), .fresh) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
        let reopened = try ReplayStore(path: path, clock: time.clock)
        XCTAssertEqual(reopened.entryCount, 303)
    }

    /// Issue 23: a compaction whose fsync of the directory fails has renamed the new file over the store,
    /// but after a power cut the name may lead to the old file again, which lacks every pass recorded
    /// since. So the store refuses one-time passes from then on (as after a failed fdatasync), and says why.
    func testAFailedDirectoryFsyncAfterCompactionStopsOneTimePasses() throws {
        let time = TestReplayClock(wall: now)
        do {
            let store = try ReplayStore(path: path, clock: time.clock)
            XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .fresh)
        }
        let lock = try ReplayStore.openLock(path)
        var state = try ReplayStore.openAndLoad(path, lock: lock, clock: time.clock)
        let problem = ReplayStore.compact(path, &state, clock: time.clock,
                                          faults: AtomicFile.Faults(syncDirectory: { _ in .ioError }))
        let expected = "compaction: fsync directory \(dir): Input/output error (EIO) after renaming \(path).tmp over \(path); reopen the store (reload or restart) once the disk is fixed"
        XCTAssertEqual(problem, expected, "reported to the caller")
        XCTAssertEqual(state.broken, expected, "every later consume fails with this reason")
        // A directory fsync that works leaves the store usable.
        var healthy = try ReplayStore.openAndLoad(path, lock: lock, clock: time.clock)
        XCTAssertNil(ReplayStore.compact(path, &healthy, clock: time.clock))
        XCTAssertNil(healthy.broken)
        XCTAssertEqual(try ReplayStore(path: path, clock: time.clock).consume(try key(1), holdUntil: now + 60, now: now), .replayed)
    }

    func testAFailingWriteRefusesThePassAndLeavesTheFileAligned() throws {
        let store = try ReplayStore(path: path)
        XCTAssertEqual(store.consume(try key(1), holdUntil: now + 60, now: now), .fresh)
        // A full disk, for real: RLIMIT_FSIZE lets 10 bytes of the next record through, then EFBIG.
        signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        var limit = saved
        limit.rlim_cur = rlim_t(ReplayStore.recordSize + 10)
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit), 0)
        let result = store.consume(try key(2), holdUntil: now + 60, now: now)
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        signal(SIGXFSZ, SIG_DFL)
        guard case .failed(let why) = result else { return XCTFail("a failed write must not accept the pass: \(result)") }
        XCTAssertTrue(why.contains("EFBIG") || why.contains("File too large"), why)
        XCTAssertEqual(try fileBytes().count, ReplayStore.recordSize, "the partial record is cut off")
        // The disk has room again: the pass is fresh (it was never accepted), and the file loads.
        XCTAssertEqual(store.consume(try key(2), holdUntil: now + 60, now: now), .fresh)
        XCTAssertEqual(try ReplayStore(path: path).entryCount, 2)
    }

    func testTwoUsersOfOneFileSeeEachOthersConsumes() throws {
        // As the daemon and `scangate credential verify --one-time` at a manual gate would.
        let time = TestReplayClock(wall: now)
        let daemon = try ReplayStore(path: path, clock: time.clock)
        let gate = try ReplayStore(path: path, clock: time.clock)
        XCTAssertEqual(daemon.consume(try key(1), holdUntil: now + 60, now: now), .fresh)
        XCTAssertEqual(gate.consume(try key(1), holdUntil: now + 60, now: now), .replayed)
        XCTAssertEqual(gate.consume(try key(2), holdUntil: now + 60, now: now), .fresh)
        XCTAssertEqual(daemon.consume(try key(2), holdUntil: now + 60, now: now), .replayed)
        // One compacts (rename): the other notices the new file and keeps both.
        for n in 100..<700 { XCTAssertEqual(daemon.consume(try key(n), holdUntil: now + 5, now: now), .fresh) }
        time.advance(10)
        for n in 700..<1400 { XCTAssertEqual(daemon.consume(try key(n), holdUntil: now + 60, now: now + 10), .fresh) }
        XCTAssertEqual(gate.consume(try key(1), holdUntil: now + 60, now: now + 10), .replayed)
        XCTAssertEqual(gate.consume(try key(1399), holdUntil: now + 60, now: now + 10), .replayed)
        XCTAssertEqual(gate.consume(try key(5000), holdUntil: now + 60, now: now + 10), .fresh)
        XCTAssertEqual(daemon.consume(try key(5000), holdUntil: now + 60, now: now + 10), .replayed)
    }
}

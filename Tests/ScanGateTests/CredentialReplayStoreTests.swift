@testable import Credentials
import Foundation
import Platform
import XCTest

/// The one-time-use store: durable consumes, torn records, corruption, expiry, compaction, a write
/// that fails, two users of one file.
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
        XCTAssertEqual(store.consume(try key(1), expiresAt: now + 60, now: now), .fresh)
        XCTAssertEqual(store.consume(try key(1), expiresAt: now + 60, now: now), .replayed)
        XCTAssertEqual(store.consume(try key(2), expiresAt: now + 60, now: now), .fresh)
        XCTAssertEqual(try fileBytes().count, 64)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        // A new process (a new store on the same file): both are still consumed.
        let again = try ReplayStore(path: path)
        XCTAssertEqual(again.entryCount, 2)
        XCTAssertEqual(again.consume(try key(1), expiresAt: now + 60, now: now + 1), .replayed)
        XCTAssertEqual(again.consume(try key(2), expiresAt: now + 60, now: now + 1), .replayed)
        XCTAssertEqual(again.consume(try key(3), expiresAt: now + 60, now: now + 1), .fresh)
        // The same jti from another issuer or format is another pass.
        XCTAssertNotEqual(try ReplayKey.make(format: .jwt, issuer: "other", tokenID: Array("jti-1".utf8)), try key(1))
        XCTAssertNotEqual(try ReplayKey.make(format: .cwt, issuer: "site", tokenID: Array("jti-1".utf8)), try key(1))
    }

    func testTornLastRecordIsCutOffAndTheRestLoads() throws {
        do {
            let store = try ReplayStore(path: path)
            for n in 0..<3 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 60, now: now), .fresh) }
        }
        let whole = try fileBytes()
        XCTAssertEqual(whole.count, 96)
        // A kill -9 or power cut part-way through the fourth record: every prefix of it.
        let fourth = ReplayStore.record(try key(3), now + 60)
        for cut in 1...ReplayStore.recordSize {
            var torn = whole + fourth.prefix(cut)
            if cut == ReplayStore.recordSize { torn[torn.count - 1] ^= 0xFF }   // whole but its CRC fails
            try TestFiles.write(bytes: torn, to: path)
            chmod(path, 0o600)
            let store = try ReplayStore(path: path)
            XCTAssertEqual(store.entryCount, 3, "cut at \(cut)")
            XCTAssertEqual(try fileBytes(), whole, "the torn record is cut off (cut at \(cut))")
            XCTAssertEqual(store.consume(try key(0), expiresAt: now + 60, now: now), .replayed)
            XCTAssertEqual(store.consume(try key(3), expiresAt: now + 60, now: now), .fresh, "its read was never accepted")
            XCTAssertEqual(try fileBytes().count, 128)
        }
    }

    func testDamageBeforeTheLastRecordRefusesToLoad() throws {
        do {
            let store = try ReplayStore(path: path)
            for n in 0..<3 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 60, now: now), .fresh) }
        }
        var bytes = try fileBytes()
        bytes[40] ^= 0x01   // inside the second record
        try TestFiles.write(bytes: bytes, to: path)
        XCTAssertThrowsError(try ReplayStore(path: path)) { error in
            XCTAssertTrue("\(error)".hasPrefix("credential-replay-store \(path): record at byte 32 is damaged"), "\(error)")
        }
        // Zeros where records were (a file system that lost data): also refused.
        try TestFiles.write(bytes: [UInt8](repeating: 0, count: 96), to: path)
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

    func testEntriesExpireAndTheFileIsCompacted() throws {
        let store = try ReplayStore(path: path)
        // 600 passes that expire at now + 10, then 50 that live long.
        for n in 0..<600 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 10, now: now), .fresh) }
        for n in 1000..<1050 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 100_000, now: now), .fresh) }
        XCTAssertEqual(store.fileRecords, 650)
        var before = stat()
        stat(path, &before)
        // Later, past the first expiry: new consumes prune and compact once expired records dominate.
        let later = now + 20
        XCTAssertEqual(store.consume(try key(0), expiresAt: later + 10, now: later), .fresh, "an expired entry no longer blocks (the pass is expired anyway)")
        for n in 2000..<2700 { XCTAssertEqual(store.consume(try key(n), expiresAt: later + 10, now: later), .fresh) }
        var after = stat()
        stat(path, &after)
        XCTAssertNotEqual(after.st_ino, before.st_ino, "compacted into a new file, renamed over the old")
        XCTAssertLessThan(store.fileRecords, 650 + 701)
        XCTAssertEqual(try fileBytes().count, store.fileRecords * ReplayStore.recordSize)
        for n in 1000..<1050 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 100_000, now: later), .replayed) }
        // A reopen, with a clock that runs far ahead (a Pi that booted with a wrong time): nothing is dropped
        // at load, so a pass recorded before is still refused once the clock is right again.
        let records = store.fileRecords
        let reopened = try ReplayStore(path: path)
        XCTAssertEqual(try fileBytes().count, records * ReplayStore.recordSize, "not compacted at load")
        XCTAssertEqual(reopened.liveEntries(now: now + 200_000), 0)
        XCTAssertEqual(reopened.liveEntries(now: later), 50 + 1 + 700, "the long ones, key 0 again, and 2000..<2700")
        XCTAssertTrue(reopened.contains(try key(1000), now: later))
        XCTAssertFalse(reopened.contains(try key(1000), now: now + 200_000))
        // Consumes at a time when everything expired: they prune, and the file is rewritten small.
        for n in 5000..<5256 { XCTAssertEqual(reopened.consume(try key(n), expiresAt: now + 300_000, now: now + 200_000), .fresh) }
        XCTAssertEqual(reopened.fileRecords, 256)
        XCTAssertEqual(try fileBytes().count, 256 * ReplayStore.recordSize)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    func testAKillDuringCompactionLeavesTheOldFile() throws {
        // A compaction killed before its rename leaves PATH.tmp beside the intact store.
        do {
            let store = try ReplayStore(path: path)
            XCTAssertEqual(store.consume(try key(1), expiresAt: now + 60, now: now), .fresh)
        }
        try TestFiles.write(bytes: ReplayStore.record(try key(9), now + 60).prefix(20) + [1, 2, 3], to: path + ".tmp")
        let store = try ReplayStore(path: path)
        XCTAssertEqual(store.entryCount, 1)
        XCTAssertEqual(store.consume(try key(1), expiresAt: now + 60, now: now), .replayed)
        XCTAssertEqual(store.consume(try key(9), expiresAt: now + 60, now: now), .fresh)
        // The next compaction writes the temp file afresh.
        var s = 0
        for n in 100..<800 { if store.consume(try key(n), expiresAt: now + 1, now: now) == .fresh { s += 1 } }
        XCTAssertEqual(s, 700)
        XCTAssertEqual(store.consume(try key(2000), expiresAt: now + 60, now: now + 5), .fresh)
        for n in 3000..<3300 { XCTAssertEqual(store.consume(try key(n), expiresAt: now + 60, now: now + 5), .fresh) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".tmp"))
        let reopened = try ReplayStore(path: path)
        XCTAssertEqual(reopened.entryCount, 303)
    }

    func testAFailingWriteRefusesThePassAndLeavesTheFileAligned() throws {
        let store = try ReplayStore(path: path)
        XCTAssertEqual(store.consume(try key(1), expiresAt: now + 60, now: now), .fresh)
        // A full disk, for real: RLIMIT_FSIZE lets 10 bytes of the next record through, then EFBIG.
        signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        var limit = saved
        limit.rlim_cur = rlim_t(ReplayStore.recordSize + 10)
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit), 0)
        let result = store.consume(try key(2), expiresAt: now + 60, now: now)
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        signal(SIGXFSZ, SIG_DFL)
        guard case .failed(let why) = result else { return XCTFail("a failed write must not accept the pass: \(result)") }
        XCTAssertTrue(why.contains("EFBIG") || why.contains("File too large"), why)
        XCTAssertEqual(try fileBytes().count, ReplayStore.recordSize, "the partial record is cut off")
        // The disk has room again: the pass is fresh (it was never accepted), and the file loads.
        XCTAssertEqual(store.consume(try key(2), expiresAt: now + 60, now: now), .fresh)
        XCTAssertEqual(try ReplayStore(path: path).entryCount, 2)
    }

    func testTwoUsersOfOneFileSeeEachOthersConsumes() throws {
        // As the daemon and `scangate credential verify --one-time` at a manual gate would.
        let daemon = try ReplayStore(path: path)
        let gate = try ReplayStore(path: path)
        XCTAssertEqual(daemon.consume(try key(1), expiresAt: now + 60, now: now), .fresh)
        XCTAssertEqual(gate.consume(try key(1), expiresAt: now + 60, now: now), .replayed)
        XCTAssertEqual(gate.consume(try key(2), expiresAt: now + 60, now: now), .fresh)
        XCTAssertEqual(daemon.consume(try key(2), expiresAt: now + 60, now: now), .replayed)
        // One compacts (rename): the other notices the new file and keeps both.
        for n in 100..<700 { XCTAssertEqual(daemon.consume(try key(n), expiresAt: now + 5, now: now), .fresh) }
        for n in 700..<1400 { XCTAssertEqual(daemon.consume(try key(n), expiresAt: now + 60, now: now + 10), .fresh) }
        XCTAssertEqual(gate.consume(try key(1), expiresAt: now + 60, now: now + 10), .replayed)
        XCTAssertEqual(gate.consume(try key(1399), expiresAt: now + 60, now: now + 10), .replayed)
        XCTAssertEqual(gate.consume(try key(5000), expiresAt: now + 60, now: now + 10), .fresh)
        XCTAssertEqual(daemon.consume(try key(5000), expiresAt: now + 60, now: now + 10), .replayed)
    }
}

@testable import Credentials
import Foundation
import Platform
import XCTest

/// The anti-passback store: last uses recorded and looked up, the timeout, a reopen, a torn or damaged
/// file, the bound.
final class PassbackStoreTests: XCTestCase {
    var dir = ""
    var path = ""
    let now: Int64 = 1_800_000_000

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        path = dir + "/policy-state.passback"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func n(_ text: String) -> [UInt8] { Array(text.utf8) }

    func fileBytes() throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    func write(_ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    func testRecordAndLookUpByteForByte() throws {
        let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        XCTAssertNil(store.lastUse(n("4711")))
        XCTAssertNoThrow(try store.record(n("4711"), .entry, at: now).get())
        XCTAssertNoThrow(try store.record(n("4712"), .exit, at: now + 1).get())
        XCTAssertEqual(store.lastUse(n("4711")), PassbackStore.Use(direction: .entry, at: now))
        XCTAssertEqual(store.lastUse(n("4712")), PassbackStore.Use(direction: .exit, at: now + 1))
        // Byte for byte: a different normalisation of the same text is another number.
        XCTAssertNoThrow(try store.record(n("caf\u{E9}"), .entry, at: now).get())
        XCTAssertNil(store.lastUse(Array("cafe\u{301}".utf8)))
        XCTAssertNil(store.lastUse(n("471")))
        // The last use wins.
        XCTAssertNoThrow(try store.record(n("4711"), .exit, at: now + 5).get())
        XCTAssertEqual(store.lastUse(n("4711")), PassbackStore.Use(direction: .exit, at: now + 5))
        XCTAssertEqual(store.count, 3)
        XCTAssertEqual(store.fileRecords, 4)
        // Refused numbers: empty or too long.
        XCTAssertThrowsError(try store.record([], .entry, at: now).get())
        XCTAssertThrowsError(try store.record([UInt8](repeating: 0x31, count: PassbackStore.maxNumberBytes + 1), .entry, at: now).get())
    }

    func testTheTimeoutDecidesWhetherAUseStillCounts() throws {
        let store = try PassbackStore(path: path, timeoutSeconds: 60, now: now)
        XCTAssertNoThrow(try store.record(n("1"), .entry, at: now).get())
        XCTAssertNotNil(store.recentUse(n("1"), now: now + 59))
        XCTAssertNil(store.recentUse(n("1"), now: now + 60))
        XCTAssertNotNil(store.recentUse(n("1"), now: now - 10), "a use in the future (the clock went back) counts")
        let forever = try PassbackStore(path: dir + "/other", timeoutSeconds: 0, now: now)
        XCTAssertNoThrow(try forever.record(n("1"), .entry, at: now).get())
        XCTAssertNotNil(forever.recentUse(n("1"), now: now + 400 * 86400))
        // The rule: a passback only in the door's own direction.
        let atIn = PassbackRule(mode: .hard, direction: .entry, store: store)
        let atOut = PassbackRule(mode: .hard, direction: .exit, store: store)
        XCTAssertNotNil(atIn.passback(n("1"), now: now + 1))
        XCTAssertNil(atOut.passback(n("1"), now: now + 1))
        XCTAssertNil(atIn.passback(n("1"), now: now + 60))
        // Uses past the timeout are not loaded again.
        store.close()
        let reopened = try PassbackStore(path: path, timeoutSeconds: 60, now: now + 61)
        XCTAssertEqual(reopened.count, 0)
    }

    func testAReopenedStoreKeepsItsUsesAndAClosedOneRecordsNothing() throws {
        let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        for i in 0..<50 { XCTAssertNoThrow(try store.record(n("p\(i)"), i % 2 == 0 ? .entry : .exit, at: now + Int64(i)).get()) }
        store.close()
        XCTAssertThrowsError(try store.record(n("late"), .entry, at: now).get())
        let reopened = try PassbackStore(path: path, timeoutSeconds: 0, now: now + 100)
        XCTAssertEqual(reopened.count, 50)
        XCTAssertEqual(reopened.lastUse(n("p7")), PassbackStore.Use(direction: .exit, at: now + 7))
        XCTAssertEqual(reopened.lastUse(n("p8")), PassbackStore.Use(direction: .entry, at: now + 8))
        XCTAssertNil(reopened.lastUse(n("late")))
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testATornTailIsCutOffAndGarbageIsSkipped() throws {
        do {
            let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
            for i in 0..<3 { XCTAssertNoThrow(try store.record(n("t\(i)"), .entry, at: now + Int64(i)).get()) }
        }
        let whole = try fileBytes()
        let recordSize = whole.count / 3
        // A torn last record (a power cut mid-write): cut off; the records before stay.
        for cut in [1, 5, recordSize - 1] {
            try write(whole + Array(PassbackStore.record(n("torn"), .init(direction: .entry, at: now)).prefix(cut)))
            let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
            XCTAssertEqual(store.count, 3, "cut \(cut)")
            XCTAssertNil(store.lastUse(n("torn")))
            XCTAssertEqual(try fileBytes(), whole, "the torn record is cut off")
            XCTAssertNoThrow(try store.record(n("after"), .exit, at: now).get())
            store.close()
            XCTAssertEqual(try PassbackStore(path: path, timeoutSeconds: 0, now: now).lastUse(n("after")), .init(direction: .exit, at: now))
        }
        // Garbage in the middle and at the end: skipped, the valid records around it kept, the file rewritten.
        var damaged = whole
        damaged[recordSize + 6] ^= 0xFF
        try write(Array(repeating: 0x53, count: 7) + damaged + Array("garbage\n".utf8))
        let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        XCTAssertEqual(store.lastUse(n("t0")), .init(direction: .entry, at: now))
        XCTAssertNil(store.lastUse(n("t1")), "the damaged record is lost")
        XCTAssertEqual(store.lastUse(n("t2")), .init(direction: .entry, at: now + 2))
        XCTAssertNoThrow(try store.record(n("t3"), .entry, at: now + 3).get())
        store.close()
        let again = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        XCTAssertEqual(again.count, 3)
        XCTAssertEqual(try fileBytes().count, 3 * recordSize, "rewritten with the held uses, then one appended")
        // Random bytes only: an empty store, no crash.
        var generator = SystemRandomNumberGenerator()
        try write((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        XCTAssertEqual(try PassbackStore(path: path, timeoutSeconds: 0, now: now).count, 0)
    }

    func testTheBoundIsRespectedAndTheNewestUsesKept() throws {
        let store = try PassbackStore(path: path, timeoutSeconds: 0, now: now, maxNumbers: 100)
        for i in 0..<250 {
            XCTAssertNoThrow(try store.record(n("b\(i)"), .entry, at: now + Int64(i)).get())
            XCTAssertLessThanOrEqual(store.count, 100)
        }
        XCTAssertNotNil(store.lastUse(n("b249")))
        XCTAssertNil(store.lastUse(n("b0")), "the oldest went first")
        store.close()
        let reopened = try PassbackStore(path: path, timeoutSeconds: 0, now: now, maxNumbers: 100)
        XCTAssertLessThanOrEqual(reopened.count, 100)
        XCTAssertNotNil(reopened.lastUse(n("b249")))
        // Uses past the timeout go when the file is rewritten: the records do not grow without bound.
        let timed = try PassbackStore(path: dir + "/timed", timeoutSeconds: 10, now: now)
        for i in 0..<2100 { XCTAssertNoThrow(try timed.record(n("one"), .entry, at: now + Int64(i)).get()) }
        XCTAssertEqual(timed.count, 1)
        XCTAssertLessThan(timed.fileRecords, 1100, "rewritten once dead records outnumber the held ones")
    }

    /// A reload opens the store again while the old instance is still open; if the reload then fails, the
    /// old one goes on: each sees what the other appended, and a rewrite by the other.
    func testTwoInstancesOfOneFileFollowEachOther() throws {
        let old = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        XCTAssertNoThrow(try old.record(n("a"), .entry, at: now).get())
        XCTAssertNoThrow(try old.record(n("b"), .entry, at: now + 1).get())
        // A bound of 1: `new` keeps the newest use only and rewrites the file (a new inode).
        let new = try PassbackStore(path: path, timeoutSeconds: 0, now: now, maxNumbers: 1)
        XCTAssertEqual(new.count, 1)
        XCTAssertEqual(new.recentUse(n("b"), now: now), .init(direction: .entry, at: now + 1))
        XCTAssertNil(old.recentUse(n("a"), now: now + 1), "the old instance loads the rewritten file again")
        XCTAssertNoThrow(try new.record(n("c"), .exit, at: now + 2).get())
        XCTAssertEqual(old.recentUse(n("c"), now: now + 2), .init(direction: .exit, at: now + 2), "appended by the other")
        XCTAssertNoThrow(try old.record(n("d"), .entry, at: now + 3).get())
        let third = try PassbackStore(path: path, timeoutSeconds: 0, now: now)
        XCTAssertEqual(third.lastUse(n("c")), .init(direction: .exit, at: now + 2))
        XCTAssertEqual(third.lastUse(n("d")), .init(direction: .entry, at: now + 3), "appended to the file the name leads to")
    }

    func testAFileOfAnotherKindIsRefusedWithItsPath() throws {
        XCTAssertEqual(symlink(dir + "/elsewhere", path), 0)
        XCTAssertThrowsError(try PassbackStore(path: path, timeoutSeconds: 0, now: now)) { error in
            XCTAssertTrue("\(error)".contains(path), "\(error)")
        }
        XCTAssertThrowsError(try PassbackStore(path: dir + "/missing/dir/file", timeoutSeconds: 0, now: now)) { error in
            XCTAssertTrue("\(error)".contains("missing/dir/file") && "\(error)".contains("No such file"), "\(error)")
        }
    }
}

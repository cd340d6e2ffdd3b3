#if canImport(Glibc)
import Glibc
#endif
import Core
@testable import Credentials
import Foundation
import Pipeline
import Platform
import Stdout
import XCTest

/// One-time passes on a full disk: refused as `replay store failed` with the reason in the log, nothing
/// for the door, and accepted again once there is room, without reopening the store.
final class CredentialFullDiskTests: XCTestCase {
    var dir = ""
    var ed: PrivateKey!
    var keys: CredentialKeySet!
    let log = LogCapture()

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        let (key, credentialKey) = try CredentialFixtures.keyPair(.ed25519, kid: "site")
        ed = key
        keys = CredentialKeySet(keys: [credentialKey], source: "test")
        log.clear()
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func policy(_ store: ReplayStore) -> CredentialPolicy {
        var settings = CredentialFixtures.settings()
        settings.oneTime = true
        settings.replayStore = store.path
        return CredentialPolicy(settings: settings, keys: keys, store: store, clock: ClockSync.fixed(true), logger: log.logger)
    }

    func pass() throws -> String {
        try PassIssuer.issue(PassRequest(format: .cwt, number: "12345678", lifetimeSeconds: 600, keyID: "site", oneTime: true,
                                         now: CredentialFixtures.now), key: ed)
    }

    /// The read through the dispatcher as `run` makes it: the policy, then a door output that records
    /// what it is offered.
    let door = ScriptedDoor("relay")
    func judged(_ policy: CredentialPolicy, _ token: String) -> ReadEvent {
        ReadDispatcher(policies: [policy], doors: [door]).dispatch(CredentialFixtures.event(Array(token.utf8)))
    }

    func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    /// The record's write fails with ENOSPC: the pass is refused as `replay store failed`, the door gets
    /// nothing, the error names the store and "No space left on device"; with room again the same pass
    /// and a new one are accepted by the same store, and the refused one was never recorded.
    func testFullDiskRefusesOneTimePassesAndTheStoreWorksAgainWithRoom() throws {
        let path = dir + "/replay"
        let disk = TestFullDisk(at: .write)
        let store = try ReplayStore(path: path, faults: disk.faults)
        let policy = policy(store)
        let token = try pass()
        let refused = judged(policy, token)
        XCTAssertEqual(refused.verdict, .rejected(reason: "replay store failed"))
        XCTAssertEqual(door.events.count, 0, "no door output for a pass the store could not record")
        XCTAssertNil(refused.credential)
        XCTAssertTrue(EventLine.json(refused).contains("\"rejected\":\"replay store failed\""), EventLine.json(refused))
        let errors = log.all.filter { $0.hasPrefix("<3>") }
        XCTAssertEqual(errors.count, 1, "\(log.all)")
        XCTAssertTrue(errors[0].contains("credential refused: replay store failed") && errors[0].contains("write \(path)")
                      && errors[0].contains("No space left on device (ENOSPC)") && errors[0].contains("is full")
                      && errors[0].contains("fail closed"), errors[0])
        XCTAssertEqual(judged(policy, try pass()).verdict, .rejected(reason: "replay store failed"), "still full: still refused")
        XCTAssertEqual(fileSize(path), 0)

        disk.clear()
        let accepted = judged(policy, token)
        XCTAssertEqual(accepted.verdict, .accepted, "the pass refused for lack of space was not used up")
        XCTAssertEqual(door.events.map(\.doorData), [Array("12345678".utf8)])
        XCTAssertEqual(judged(policy, token).verdict, .rejected(reason: "replayed"))
        XCTAssertEqual(judged(policy, try pass()).verdict, .accepted)
        XCTAssertEqual(fileSize(path), 2 * ReplayStore.recordSize)
    }

    /// fdatasync fails with ENOSPC (a file system that allocates at writeback, a quota): the record that
    /// was written is cut off again, the pass refused, and the store goes on once there is room; after a
    /// restart the refused pass is not in the store and the accepted one is.
    func testNoSpaceAtSyncCutsTheRecordOffAndTheStoreGoesOn() throws {
        let path = dir + "/replay"
        let disk = TestFullDisk(at: .sync)
        let store = try ReplayStore(path: path, faults: disk.faults)
        let policy = policy(store)
        let first = try pass()
        let event = judged(policy, first)
        XCTAssertEqual(event.verdict, .rejected(reason: "replay store failed"))
        XCTAssertEqual(door.events.count, 0)
        XCTAssertTrue(log.all.contains { $0.contains("fdatasync \(path): No space left on device (ENOSPC)") && $0.contains("cut off") },
                      "\(log.all)")
        XCTAssertEqual(fileSize(path), 0, "the unsynced record is cut off")
        disk.clear()
        let second = try pass()
        XCTAssertEqual(judged(policy, second).verdict, .accepted)
        let reopened = self.policy(try ReplayStore(path: path))
        XCTAssertEqual(judged(reopened, second).verdict, .rejected(reason: "replayed"))
        XCTAssertEqual(judged(reopened, first).verdict, .accepted, "the refused pass was never recorded")
    }

    /// Any other fdatasync failure (EIO) still stops one-time use until the store is reopened: the kernel
    /// may have dropped the page.
    func testAnIOErrorAtSyncStillStopsTheStore() throws {
        let path = dir + "/replay"
        let disk = TestFullDisk(at: .sync, error: .ioError)
        let policy = policy(try ReplayStore(path: path, faults: disk.faults))
        XCTAssertEqual(judged(policy, try pass()).verdict, .rejected(reason: "replay store failed"))
        disk.clear()
        XCTAssertEqual(judged(policy, try pass()).verdict, .rejected(reason: "replay store failed"))
        XCTAssertTrue(log.all.last?.contains("reopen the store") ?? false, "\(log.all)")
    }
}

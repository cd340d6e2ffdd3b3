import Components
import Core
@testable import Credentials
import Foundation
import Platform
import XCTest

/// The site link between the credential policy and the MQTT output: own uses held while the broker is
/// away (bounded, sent again when unacknowledged), the view each read is decided with, and other kiosks'
/// uses recorded only when they are newer than what this kiosk holds.
final class SiteLinkTests: XCTestCase {
    func use(_ n: String, at: Int64, entry: Bool = true, kiosk: String = "k2") -> SiteLink.PassbackUse {
        SiteLink.PassbackUse(kiosk: kiosk, door: "d", number: Array(n.utf8), entry: entry, at: at)
    }

    func testUsesWaitWhileTheBrokerIsAwayAndTheOldestGoBeyondTheBound() {
        let link = SiteLink()
        link.share(use("1", at: 1))
        XCTAssertEqual(link.counts.waiting, 0, "no MQTT output shares uses: nothing is held")
        XCTAssertEqual(link.view, .local)
        let owner = NSObject()
        let woken = PosixMutex(0)
        link.brokerAttached(owner: ObjectIdentifier(owner), wake: { woken.withLock { $0 += 1 } })
        XCTAssertEqual(link.view, .offline, "attached, not yet connected")
        for i in 0..<(SiteLink.outboxLimit + 5) { link.share(use(String(i), at: Int64(i) + 1)) }
        XCTAssertEqual(link.counts.waiting, SiteLink.outboxLimit)
        XCTAssertEqual(link.counts.dropped, 5)
        XCTAssertEqual(woken.withLock { $0 }, SiteLink.outboxLimit + 5)
        XCTAssertEqual(link.pendingUses(max: 1).first?.number, Array("5".utf8), "the oldest five went")
        link.setConnected(true)
        XCTAssertEqual(link.view, .shared)
        let first = link.pendingUses(max: 3)
        link.published(3)
        XCTAssertEqual(link.counts.sent, 3)
        link.requeue(Array(first.suffix(1)))
        XCTAssertEqual(link.pendingUses(max: 1), Array(first.suffix(1)), "an unacknowledged use goes first again")
        XCTAssertEqual(link.counts.sent, 2)
        // A reload builds a new MQTT output before the old one closes: the old one's detach changes nothing.
        let newer = NSObject()
        link.brokerAttached(owner: ObjectIdentifier(newer), wake: {})
        link.brokerDetached(owner: ObjectIdentifier(owner))
        XCTAssertEqual(link.view, .offline)
        link.brokerDetached(owner: ObjectIdentifier(newer))
        XCTAssertEqual(link.view, .local)
    }

    func testAnotherKiosksUseIsRecordedOnlyWhenNewerAndNotFromTheFuture() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now: Int64 = 1_800_000_000
        let store = try PassbackStore(path: dir + "/state.passback", timeoutSeconds: 3600, now: now)
        let log = LogCapture()
        XCTAssertTrue(CredentialPolicy.receive(use("7", at: now - 10), into: store, now: now, logger: log.logger))
        XCTAssertEqual(store.lastUse(Array("7".utf8)), PassbackStore.Use(direction: .entry, at: now - 10))
        XCTAssertFalse(CredentialPolicy.receive(use("7", at: now - 20, entry: false), into: store, now: now, logger: log.logger),
                       "older than the use held: a late message does not undo a newer use")
        XCTAssertFalse(CredentialPolicy.receive(use("7", at: now - 10, entry: false), into: store, now: now, logger: log.logger), "same time")
        XCTAssertTrue(CredentialPolicy.receive(use("7", at: now - 5, entry: false), into: store, now: now, logger: log.logger))
        XCTAssertEqual(store.lastUse(Array("7".utf8))?.direction, .exit)
        XCTAssertFalse(CredentialPolicy.receive(use("8", at: now - 3600), into: store, now: now, logger: log.logger), "past the timeout")
        XCTAssertNil(store.lastUse(Array("8".utf8)))
        XCTAssertFalse(CredentialPolicy.receive(use("9", at: now + 301), into: store, now: now, logger: log.logger),
                       "a use stamped far ahead would bar the pass until then")
        XCTAssertTrue(log.text.contains("stamped 301 s ahead of this clock; ignored"), log.text)
        XCTAssertTrue(CredentialPolicy.receive(use("9", at: now + 300), into: store, now: now, logger: log.logger), "within the leeway")
        // It is durable: a restart reads it back.
        store.close()
        let reopened = try PassbackStore(path: dir + "/state.passback", timeoutSeconds: 3600, now: now)
        XCTAssertEqual(reopened.lastUse(Array("7".utf8)), PassbackStore.Use(direction: .exit, at: now - 5))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Components
import Core
@testable import Credentials
import Foundation
import Settings
import XCTest
import Platform

/// Doctor's rows for signed passes: the keys with their kids, the clock by the rule `run` applies, and
/// the replay store's directory as the service user sees it, without creating anything.
final class CredentialDoctorTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func settings(oneTime: Bool = false, store: String? = nil) throws -> CredentialSettings {
        var s = CredentialSettings()
        s.format = .any
        s.keys = try CredentialFixtures.writeJWKS([("site-2026", try PrivateKey.generate(.ed25519)),
                                                   ("site-2027", try PrivateKey.generate(.es256))], in: dir)
        s.oneTime = oneTime
        if let store { s.replayStore = store }
        return s
    }

    /// A filesystem of `entries` (path -> (uid, mode with type bits, size)), doctor running as `euid`,
    /// the service user being uid 1234.
    func filesystem(_ entries: [String: (uid_t, mode_t, Int)], euid: uid_t = 0, serviceUser: Bool = true) -> CredentialDoctor.Filesystem {
        CredentialDoctor.Filesystem(status: { path in
            guard let (uid, mode, size) = entries[path] else { return nil }
            var info = Glibc.stat()
            info.st_uid = uid
            info.st_gid = uid
            info.st_mode = mode
            info.st_size = size
            return info
        }, serviceUser: { serviceUser ? (1234, 1234) : nil }, euid: { euid })
    }

    func storeRow(_ store: String, _ fs: CredentialDoctor.Filesystem) throws -> DoctorRow {
        let rows = CredentialDoctor.rows(try settings(oneTime: true, store: store), clock: ClockSync.fixed(true), filesystem: fs)
        XCTAssertEqual(rows.map(\.check), ["credential keys", "credential clock", "credential replay store"])
        return rows[2]
    }

    func testKeysRowListsTheKidsOrNamesTheFile() throws {
        let rows = CredentialDoctor.rows(try settings(), clock: ClockSync.fixed(true))
        XCTAssertEqual(rows.map(\.check), ["credential keys", "credential clock"], "no store row without one-time use")
        XCTAssertEqual(rows[0].result, .pass)
        XCTAssertTrue(rows[0].detail.contains("2 keys") && rows[0].detail.contains("site-2026 (ed25519)")
                      && rows[0].detail.contains("site-2027 (es256)"), rows[0].detail)
        var missing = try settings()
        missing.keys = dir + "/nope.jwks"
        let failed = CredentialDoctor.rows(missing, clock: ClockSync.fixed(true))[0]
        XCTAssertEqual(failed.result, .fail)
        XCTAssertTrue(failed.detail.contains(dir + "/nope.jwks"), failed.detail)
        XCTAssertFalse(failed.fix.isEmpty)
        var narrow = try settings()
        narrow.keys = try CredentialFixtures.writeJWKS([("only-es", try PrivateKey.generate(.es256))], in: dir, name: "es.jwks")
        narrow.algorithms = [.ed25519]
        let unusable = CredentialDoctor.rows(narrow, clock: ClockSync.fixed(true))[0]
        XCTAssertEqual(unusable.result, .fail)
        XCTAssertTrue(unusable.detail.contains("credential-algorithms"), unusable.detail)
        var off = try settings()
        off.format = .off
        XCTAssertEqual(CredentialDoctor.rows(off), [])
    }

    func testClockRow() throws {
        let detail = "kernel maximum error 16.0 s, not below 16 s (adjtimex); no /run/systemd/timesync/synchronized"
        let unsynced = CredentialDoctor.rows(try settings(), clock: ClockSync.fixed(false, detail))[1]
        XCTAssertEqual(unsynced.result, .fail)
        XCTAssertTrue(unsynced.detail.contains("clock not synchronised") && unsynced.detail.contains(detail), unsynced.detail)
        XCTAssertTrue(unsynced.fix.contains("NTP") && unsynced.fix.contains("RTC"), unsynced.fix)
        let synced = CredentialDoctor.rows(try settings(), clock: ClockSync.fixed(true, "kernel maximum error 0.05 s (adjtimex)"))[1]
        XCTAssertEqual(synced.result, .pass)
        var unchecked = try settings()
        unchecked.requireSyncedClock = false
        let notRequired = CredentialDoctor.rows(unchecked, clock: ClockSync.fixed(false, detail))[1]
        XCTAssertEqual(notRequired.result, .pass)
        XCTAssertTrue(notRequired.detail.contains("not required"), notRequired.detail)
    }

    func testStoreRowAsRootJudgesTheServiceUsersAccess() throws {
        let store = "/srv/gate/credential-replay"
        // The unit's StateDirectory before the first start: systemd will create it.
        let fresh = try storeRow("/var/lib/scangate/credential-replay", filesystem([:]))
        XCTAssertEqual(fresh.result, .pass)
        XCTAssertTrue(fresh.detail.contains("StateDirectory"), fresh.detail)
        // Another directory that is missing.
        let missing = try storeRow(store, filesystem([:]))
        XCTAssertEqual(missing.result, .fail)
        XCTAssertTrue(missing.fix.contains("install -d -o scangate"), missing.fix)
        // root's directory, 0755: the service user cannot write there.
        let rootsDir = try storeRow(store, filesystem(["/srv/gate": (0, S_IFDIR | 0o755, 0)]))
        XCTAssertEqual(rootsDir.result, .fail)
        XCTAssertTrue(rootsDir.detail.contains("not writable by user scangate") && rootsDir.fix.contains("chown scangate"), rootsDir.detail)
        // The service user's directory, empty.
        let ok = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0)]))
        XCTAssertEqual(ok.result, .pass, ok.detail)
        XCTAssertTrue(ok.detail.contains("created at the first one-time pass"), ok.detail)
        // A store that a run as root left behind: the service will be refused it.
        let rootsStore = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0),
                                                         store: (0, S_IFREG | 0o600, 64)]))
        XCTAssertEqual(rootsStore.result, .fail)
        XCTAssertTrue(rootsStore.detail.contains("owned by uid 0") && rootsStore.fix.contains("chown scangate"), rootsStore.detail)
        let groupWritable = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0),
                                                            store: (1234, S_IFREG | 0o664, 64)]))
        XCTAssertEqual(groupWritable.result, .fail)
        let good = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0),
                                                   store: (1234, S_IFREG | 0o600, 192), store + ".lock": (1234, S_IFREG | 0o600, 0)]))
        XCTAssertEqual(good.result, .pass, good.detail)
        XCTAssertTrue(good.detail.contains("holds 3 records"), good.detail)
        let noUser = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0)], serviceUser: false))
        XCTAssertEqual(noUser.result, .fail)
        XCTAssertTrue(noUser.detail.contains("no user scangate"), noUser.detail)
        // Run as the service user itself.
        let asUser = try storeRow(store, filesystem(["/srv/gate": (1234, S_IFDIR | 0o700, 0)], euid: 1234))
        XCTAssertEqual(asUser.result, .pass, asUser.detail)
    }

    func testDoctorCreatesNoStoreAndNoLockFile() throws {
        // scangate doctor as a user runs it, with one-time use pointed into an empty directory.
        let state = dir + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let s = try settings(oneTime: true)
        let result = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "0.2", "--credential-format", "any",
                                              "--credential-keys", s.keys ?? "", "--credential-one-time",
                                              "--credential-replay-store", state + "/credential-replay"])
        XCTAssertTrue(result.stdoutText.contains("credential keys") && result.stdoutText.contains("credential replay store"), result.stdoutText)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state), [], "doctor created files in the store's directory")
    }
}

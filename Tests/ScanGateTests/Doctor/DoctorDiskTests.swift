import Components
import Core
@testable import Doctor
import Foundation
@testable import Platform
import Settings
import XCTest

/// Doctor's disk rows: one per directory the config writes to, its free space and mount, and a failure
/// naming the full file system and what it breaks.
final class DoctorDiskTests: XCTestCase {
    func settings(_ dir: String) -> RunSettings {
        var s = RunSettings()
        s.credential.format = .cwt
        s.credential.oneTime = true
        s.credential.replayStore = dir + "/credential-replay"
        s.mqtt.host = "127.0.0.1"
        s.mqtt.spool = dir + "/mqtt-spool"
        return s
    }

    func probe(free: UInt64, inodes: UInt64 = 1000) -> DiskDoctor.Probe {
        DiskDoctor.Probe(space: { _ in .success(FileSystemSpace(blockSize: 4096, totalBytes: 8 << 20, availableBytes: free,
                                                                    availableInodes: inodes, totalInodes: 2048)) },
                              mount: { _ in MountPoint(directory: "/mnt/kiosk", source: "/dev/loop7", type: "ext4") },
                              existingDirectory: { $0 })
    }

    func testAFullFileSystemFailsNamingTheMountAndWhatItBreaks() {
        let rows = DiskDoctor.rows(settings("/mnt/kiosk/state"), probe: probe(free: 0))
        XCTAssertEqual(rows.count, 2, "\(rows)")
        let store = rows[0]
        XCTAssertEqual(store.check, "disk /mnt/kiosk/state")
        XCTAssertEqual(store.result, .fail)
        XCTAssertEqual(store.detail, "no space left on /mnt/kiosk (ext4 /dev/loop7) (0 bytes of 8.0 MiB free), for credential-replay-store: "
                       + "one-time passes are refused as 'replay store failed'")
        XCTAssertTrue(store.fix.hasPrefix("free space on /mnt/kiosk"), store.fix)
        XCTAssertEqual(rows[1].check, "disk /mnt/kiosk/state/mqtt-spool")
        XCTAssertTrue(rows[1].detail.contains("MQTT events are dropped (spool_dropped_no_space)"), rows[1].detail)
        XCTAssertEqual(DoctorReport(rows: rows).exitCode, DoctorReport.deviceFailureExitCode)
        let table = DoctorReport(rows: rows).table
        XCTAssertTrue(table.contains("\ndisk /mnt/kiosk/state             FAIL    no space left on /mnt/kiosk (ext4 /dev/loop7)"), table)
        // Less than one block is full too; no inodes left is named as such.
        XCTAssertEqual(DiskDoctor.rows(settings("/x"), probe: probe(free: 4095))[0].result, .fail)
        let noInodes = DiskDoctor.rows(settings("/x"), probe: probe(free: 1 << 20, inodes: 0))[0]
        XCTAssertEqual(noInodes.result, .fail)
        XCTAssertTrue(noInodes.detail.hasPrefix("no inodes left on /mnt/kiosk"), noInodes.detail)
    }

    func testRoomPassesWithTheFreeSpaceAndOneRowPerDirectory() {
        var s = settings("/mnt/kiosk")
        s.mqtt.spool = "/mnt/kiosk"
        s.service.metricsTextfile = "/mnt/kiosk/metrics.prom"
        let rows = DiskDoctor.rows(s, probe: probe(free: 3 << 20))
        XCTAssertEqual(rows, [.pass(.disk, "disk /mnt/kiosk", "3.0 MiB of 8.0 MiB free on /mnt/kiosk (ext4 /dev/loop7), "
                                    + "for credential-replay-store, mqtt-spool, metrics-textfile")])
        XCTAssertEqual(DiskDoctor.rows(RunSettings(), probe: probe(free: 0)), [], "nothing written: no rows")
    }

    func testStatusListsAddTheRollbackGuardsDirectory() {
        var s = settings("/mnt/kiosk")
        s.credential.statusList = "/etc/scangate/status-lists"
        s.policy.stateFile = "/mnt/kiosk/policy-state"
        let rows = DiskDoctor.rows(s, probe: probe(free: 0))
        XCTAssertEqual(rows.first?.check, "disk /mnt/kiosk")
        XCTAssertTrue(rows.first?.detail.contains("for credential-replay-store, policy-state-file: one-time passes are refused as "
                                                  + "'replay store failed'; a newer status list cannot be recorded") ?? false, "\(rows)")
    }

    /// The real statvfs and mountinfo on this machine's temporary directory: a pass that names a mount,
    /// and a directory not made yet judged by its parent.
    func testTheRealFileSystemOfATemporaryDirectory() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rows = DiskDoctor.rows(settings(dir))
        XCTAssertEqual(rows.map(\.result), [.pass, .pass], "\(rows)")
        XCTAssertTrue(rows[0].detail.contains(" free on /"), rows[0].detail)
        XCTAssertTrue(rows[1].detail.hasSuffix("(\(dir)/mqtt-spool does not exist yet; judged by \(dir))"), rows[1].detail)
        guard case .failure(let e) = FileSystemSpace.of(dir + "/missing") else { return XCTFail("statvfs of a missing path") }
        XCTAssertEqual(e.description, "statvfs \(dir)/missing: No such file or directory (ENOENT)")
    }

    func testMountInfoIsReadWithItsEscapes() {
        let info = """
        22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw
        40 22 0:35 / /var/lib rw shared:2 - tmpfs tmpfs rw
        41 40 7:0 / /var/lib/scan\\040gate rw - ext4 /dev/loop0 rw
        """
        XCTAssertEqual(MountPoint.containing("/var/lib/scan gate/spool", mountInfo: info),
                       MountPoint(directory: "/var/lib/scan gate", source: "/dev/loop0", type: "ext4"))
        XCTAssertEqual(MountPoint.containing("/var/lib/scangate", mountInfo: info)?.directory, "/var/lib")
        XCTAssertEqual(MountPoint.containing("/var/library", mountInfo: info)?.directory, "/")
        XCTAssertEqual(FileSystemSpace.bytes(0), "0 bytes")
        XCTAssertEqual(FileSystemSpace.bytes(1536), "1.5 KiB")
        XCTAssertEqual(FileSystemSpace.bytes(3 << 30), "3.0 GiB")
    }
}

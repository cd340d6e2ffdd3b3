import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// The ids of commands acted on, kept in the spool directory: a restart or a rebuilt output still
/// refuses a repeated id.
final class MQTTCommandIDTests: XCTestCase {
    func store(_ dir: String, _ time: TestClock, log: LogCapture = LogCapture(), capacity: Int = 4096) throws -> CommandIDStore {
        try CommandIDStore(directory: dir, clock: time.clock, logger: log.logger, capacity: capacity)
    }

    func lines(_ dir: String) -> [String] {
        ((try? String(contentsOfFile: dir + "/" + CommandIDStore.fileName, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func testAnIdActedOnIsRefusedAfterAReopen() throws {
        let dir = try TestFiles.temporaryDirectory()
        let time = TestClock()
        let first = try store(dir, time)
        XCTAssertEqual(try first.admit("p1", expires: time.wallSeconds + 30).get(), .new)
        XCTAssertEqual(try first.admit("p1", expires: time.wallSeconds + 30).get(), .repeated)
        first.close()
        XCTAssertEqual(lines(dir).count, 1, "one line per id, on disk")
        time.advance(seconds: 5)
        let second = try store(dir, time)
        XCTAssertEqual(second.loaded.ids, 1)
        XCTAssertEqual(try second.admit("p1", expires: time.wallSeconds + 30).get(), .repeated, "remembered across the restart")
        XCTAssertEqual(try second.admit("p2", expires: time.wallSeconds + 30).get(), .new)
    }

    /// After a restart, a backward step of the wall clock (in the same boot, or after a reboot) does not
    /// let an id in again while its expiry is still ahead of the clock.
    func testABackwardClockStepAfterARestartDoesNotReadmitAnId() throws {
        let dir = try TestFiles.temporaryDirectory()
        let time = TestClock()
        let first = try store(dir, time)
        XCTAssertEqual(try first.admit("x", expires: time.wallSeconds + 30).get(), .new)
        first.close()
        time.advance(seconds: 200)                 // past the boot-clock deadline (30 s + 60 s slack)
        time.stepWall(seconds: -3600)              // the wall clock an hour back
        var again = try store(dir, time)
        XCTAssertEqual(try again.admit("x", expires: time.wallSeconds + 30).get(), .repeated, "same boot, wall clock stepped back")
        again.close()
        time.reboot(synchronized: false)           // and after a reboot with the clock still behind
        again = try store(dir, time)
        XCTAssertEqual(try again.admit("x", expires: time.wallSeconds + 30).get(), .repeated, "another boot, wall clock behind")
        again.close()
        time.stepWall(seconds: 3600 + 100)         // once the wall clock is past the expiry, it is gone
        again = try store(dir, time)
        XCTAssertEqual(again.loaded.ids, 0)
        XCTAssertEqual(lines(dir).count, 0, "expired ids are dropped from the file at open")
        XCTAssertEqual(try again.admit("x", expires: time.wallSeconds + 30).get(), .new)
    }

    /// Bounded: at most `capacity` live ids (then refused, never forgotten early); the file is compacted
    /// (temporary file, rename) so it never holds more than twice that many lines.
    func testTheFileIsBoundedAndCompacted() throws {
        let dir = try TestFiles.temporaryDirectory()
        let time = TestClock()
        let ids = try store(dir, time, capacity: 8)
        for n in 0..<8 { XCTAssertEqual(try ids.admit("c\(n)", expires: time.wallSeconds + 5).get(), .new) }
        XCTAssertEqual(try ids.admit("full", expires: time.wallSeconds + 5).get(), .full)
        for round in 0..<20 {
            time.advance(seconds: 70)   // past expiry and slack
            for n in 0..<8 { XCTAssertEqual(try ids.admit("r\(round)-\(n)", expires: time.wallSeconds + 5).get(), .new) }
            XCTAssertLessThanOrEqual(lines(dir).count, 2 * 8 + 1)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/" + CommandIDStore.fileName + ".tmp"))
        ids.close()
        let reopened = try store(dir, time, capacity: 8)
        XCTAssertEqual(reopened.loaded.ids, 8, "the last round's ids")
        XCTAssertEqual(try reopened.admit("r19-3", expires: time.wallSeconds + 5).get(), .repeated)
    }

    /// A torn or damaged line is skipped (the others kept), and the file is rewritten clean at open so
    /// appends go on after a whole line.
    func testADamagedLineIsSkippedAndTheFileRewritten() throws {
        let dir = try TestFiles.temporaryDirectory()
        let time = TestClock()
        let first = try store(dir, time)
        for id in ["a", "b", "c"] { _ = try first.admit(id, expires: time.wallSeconds + 30).get() }
        first.close()
        let path = dir + "/" + CommandIDStore.fileName
        var text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains("\nb "))
        text = text.replacingOccurrences(of: "\nb ", with: "\nB ")   // b's checksum no longer matches
        text += "d 12"                                          // a torn last line
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let log = LogCapture()
        let again = try store(dir, time, log: log)
        XCTAssertEqual(again.loaded.ids, 2)
        XCTAssertEqual(again.loaded.skipped, 2)
        XCTAssertTrue(log.contains("2 lines that are not valid command ids were skipped"), log.all.joined(separator: "\n"))
        XCTAssertEqual(try again.admit("a", expires: time.wallSeconds + 30).get(), .repeated)
        XCTAssertEqual(try again.admit("c", expires: time.wallSeconds + 30).get(), .repeated)
        XCTAssertEqual(lines(dir).count, 2, "rewritten with the valid ids only")
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).hasSuffix("\n"))
    }

    /// Not through a symbolic link, only a regular file of bounded size.
    func testTheFileMustBeARegularFileOfItsOwn() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/" + CommandIDStore.fileName
        let elsewhere = dir + "/elsewhere"
        try "".write(toFile: elsewhere, atomically: false, encoding: .utf8)
        XCTAssertEqual(symlink(elsewhere, path), 0)
        XCTAssertThrowsError(try store(dir, TestClock())) { error in
            XCTAssertTrue("\(error)".contains("\(path): a symbolic link, not the spool's own file"), "\(error)")
        }
        unlink(path)
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        XCTAssertThrowsError(try store(dir, TestClock())) { error in
            XCTAssertTrue("\(error)".contains("\(path): not a regular file"), "\(error)")
        }
        unlink(path)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        XCTAssertEqual(truncate(path, off_t(CommandIDStore.maxFileBytes + 1)), 0)
        XCTAssertThrowsError(try store(dir, TestClock())) { error in
            XCTAssertTrue("\(error)".contains("more than the \(CommandIDStore.maxFileBytes) a command id file can hold"), "\(error)")
        }
    }

    /// Through the broker: an id acted on by one output is refused by the next one on the same spool (a
    /// restart, or a reload that rebuilds the output), even though it has not expired.
    func testARepeatedIdIsRefusedAfterTheOutputIsRebuilt() throws {
        let library = try MosquittoLibrary()
        let rig = try MQTTCommandRig()
        let (broker, sub, prefix, settings) = (rig.broker, rig.sub, rig.prefix, rig.settings)
        let handler = RecordingCommandHandler()
        func results() -> [[String: Any]] { rig.results("pause") }
        let expires = Int64(Date().timeIntervalSince1970) + 300
        let command = #"{"id":"once","expires":\#(expires)}"#
        var output = try MQTTTestEvents.output(settings, library: library, log: LogCapture(), commands: handler)
        XCTAssertTrue(waitUntil(15) {
            mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: command)
            return sub.wait(timeout: 0.5) { _ in !results().isEmpty }
        })
        XCTAssertEqual(results().first?["result"] as? String, "ok")
        output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000))

        let log = LogCapture()
        output = try MQTTTestEvents.output(settings, library: library, log: log, commands: handler)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let before = results().count
        XCTAssertTrue(waitUntil(15) {
            mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: command)
            return sub.wait(timeout: 0.5) { _ in results().count > before }
        })
        let again = try XCTUnwrap(results().last)
        XCTAssertEqual(again["result"] as? String, "refused")
        XCTAssertTrue((again["detail"] as? String)?.contains("was already acted on") == true, "\(again)")
        XCTAssertEqual(handler.performed.filter { $0 == .pause }.count, 1, "acted on once across the rebuild: \(handler.performed)")
    }
}

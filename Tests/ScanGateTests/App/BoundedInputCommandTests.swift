#if canImport(Glibc)
import Glibc
#endif
import Core
import Foundation
import Images
import Platform
import XCTest

/// The hostile files of issue 16, given to the built `scangate` as a user would: each is refused at once
/// with exit 2 and one line on stderr naming the file, or read within its bounds. Every run waits on the
/// process's exit with a deadline; a process still running then is killed (SIGKILL: a process stuck in
/// open(2) on a FIFO ignores SIGTERM) and the test fails.
final class BoundedInputCommandTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    /// A running scangate whose output is collected; `wait` ends it with SIGKILL after the deadline.
    final class Run: @unchecked Sendable {
        let process = Process()
        private let exited = DispatchSemaphore(value: 0)
        private final class Collected: Sendable {
            let data = PosixMutex<(Data, Data)>((Data(), Data()))
        }
        private let collected = Collected()
        private let readers = DispatchGroup()
        let stderrLine = DispatchSemaphore(value: 0)

        init(_ args: [String]) throws {
            process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
            process.arguments = args
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            process.terminationHandler = { [exited] _ in exited.signal() }
            try process.run()
            let collected = self.collected, stderrLine = self.stderrLine
            DispatchQueue.global().async(group: readers) {
                let d = out.fileHandleForReading.readDataToEndOfFile()
                collected.data.withLock { $0.0 = d }
            }
            DispatchQueue.global().async(group: readers) {
                let handle = err.fileHandleForReading
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    collected.data.withLock { $0.1.append(chunk) }
                    if chunk.contains(0x0A) { stderrLine.signal() }
                }
            }
        }

        /// Waits for the exit; nil (and the process killed) when it did not end within `seconds`.
        func wait(seconds: Double) -> Outcome? {
            var finished = exited.wait(timeout: .now() + seconds) == .success
            if !finished {
                kill(process.processIdentifier, SIGKILL)
                _ = exited.wait(timeout: .now() + 10)
                finished = false
            }
            readers.wait()
            let (o, e) = collected.data.withLock { $0 }
            guard finished else { return nil }
            return Outcome(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                           stderr: String(decoding: e, as: UTF8.self))
        }
    }

    private func scangate(_ args: [String], seconds: Double = 20, file: StaticString = #filePath, line: UInt = #line) throws -> Outcome? {
        let run = try Run(args)
        guard let outcome = run.wait(seconds: seconds) else {
            XCTFail("scangate \(args.joined(separator: " ")) did not end within \(seconds) s (killed)", file: file, line: line)
            return nil
        }
        return outcome
    }

    /// Exit 2 and exactly the one line `expected` on stderr.
    private func assertRefused(_ args: [String], _ expected: String, file: StaticString = #filePath, line: UInt = #line) throws {
        guard let outcome = try scangate(args, file: file, line: line) else { return }
        XCTAssertEqual(outcome.status, 2, outcome.stderr, file: file, line: line)
        XCTAssertEqual(outcome.stderrLines, [expected], file: file, line: line)
        XCTAssertEqual(outcome.stdout, "", file: file, line: line)
    }

    private func makeFIFO(_ name: String) -> String {
        let path = dir + "/" + name
        XCTAssertEqual(mkfifo(path, 0o600), 0, "mkfifo \(path): \(Errno.current)")
        return path
    }

    func testDecodeImageOfDevZeroIsRefusedAtOnce() throws {
        try assertRefused(["decode-image", "/dev/zero"],
                          "scangate: cannot read /dev/zero: it is a character device, not a regular file")
    }

    func testDecodeImageOfAHugeSparseFileNamesItsSizeAndTheLimit() throws {
        let path = dir + "/huge.png"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        XCTAssertEqual(truncate(path, 9_800_000_000), 0)
        try assertRefused(["decode-image", path], "scangate: cannot read \(path): it is 9.1 GB; image files are limited to 64 MB")
    }

    func testAPNGThatClaims30000x30000IsRefusedAtOnce() throws {
        let path = dir + "/claims.png"
        try TestFiles.write(bytes: pngHeaderOnly(width: 30000, height: 30000), to: path)
        try assertRefused(["decode-image", path],
                          "scangate: cannot read \(path): PNG size 30000x30000 is not supported (images are limited to 67108864 pixels, e.g. 8192x8192)")
    }

    func testReplayFolderWithAFrameLinkedToDevZeroIsRefused() throws {
        let frames = dir + "/frames"
        XCTAssertEqual(mkdir(frames, 0o700), 0)
        try FileBytes.write(PGMCodec.encode(LumaImage(width: 16, height: 16, pixels: [UInt8](repeating: 200, count: 256))),
                            to: frames + "/0001.pgm")
        XCTAssertEqual(symlink("/dev/zero", frames + "/0002.pgm"), 0)
        try assertRefused(["run", "--camera", "replay:" + frames, "--fast"],
                          "scangate: cannot replay \(frames)/0002.pgm: it is a symbolic link to a character device, not a regular file (replay frames must be regular files)")
    }

    func testReplayOfAY4MLinkedToDevZeroIsRefused() throws {
        XCTAssertEqual(symlink("/dev/zero", dir + "/endless.y4m"), 0)
        try assertRefused(["run", "--camera", "replay:" + dir + "/endless.y4m", "--fast"],
                          "scangate: cannot read \(dir)/endless.y4m: it is a symbolic link to a character device, not a regular file (want a .y4m file or a folder of frames)")
    }

    func testReplayOfAFIFOWithNoWriterIsRefusedInsteadOfBlockingInOpen() throws {
        let fifo = makeFIFO("camera.y4m")
        try assertRefused(["run", "--camera", "replay:" + fifo, "--fast"],
                          "scangate: cannot read \(fifo): it is a FIFO (named pipe), not a regular file (want a .y4m file or a folder of frames)")
    }

    func testConfigAndScenarioFIFOsAreRefused() throws {
        let config = makeFIFO("scangate.conf")
        try assertRefused(["run", "--config", config, "--camera", "sim:HELLO"],
                          "scangate: cannot read config file \(config): it is a FIFO (named pipe), not a regular file")
        try assertRefused(["check-config", config],
                          "scangate check-config: cannot read config file \(config): it is a FIFO (named pipe), not a regular file")
        let scenario = makeFIFO("door.scenario")
        try assertRefused(["run", "--camera", "sim:" + scenario, "--fast"],
                          "scangate: cannot read \(scenario): it is a FIFO (named pipe), not a regular file")
    }

    /// A long recording read as fast as decoding goes, forever (--loop): SIGTERM ends it at once with
    /// exit 0, since every read is a bounded read of a regular file.
    func testSIGTERMStopsALongReplayPromptly() throws {
        let path = dir + "/long.y4m"
        let header = Y4MHeader(width: 640, height: 480, fps: 15, chroma: .c420jpeg)
        var bytes = header.encoded()
        let frame = Array("FRAME\n".utf8) + [UInt8](repeating: 128, count: 640 * 480 * 3 / 2)
        for _ in 0..<16 { bytes += frame }
        try TestFiles.write(bytes: bytes, to: path)
        let run = try Run(["run", "--camera", "replay:" + path, "--fast", "--loop", "--log-level", "info"])
        // The daemon logs "reading replay:..." once it runs.
        XCTAssertEqual(run.stderrLine.wait(timeout: .now() + 20), .success, "no log line within 20 s")
        kill(run.process.processIdentifier, SIGTERM)
        guard let outcome = run.wait(seconds: 10) else {
            XCTFail("did not end within 10 s of SIGTERM (killed)")
            return
        }
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertTrue(outcome.stderr.contains("signal SIGTERM: stopping"), outcome.stderr)
    }

    /// libzbar's DataBar decoder prints `WARNING: ... Assertion "seg->finder >= 0" failed.` to stdio's
    /// stderr on this photo (four times, before the fix); now it goes to the logger at debug level, and
    /// decode-image's stderr stays empty. The code is still read.
    func testZbarAssertionReportsDoNotReachStderr() throws {
        let photo = try XCTUnwrap(LibraryStderrTests.assertionPhoto(), LibraryStderrTests.corpusMissing)
        guard let outcome = try scangate(["decode-image", photo]) else { return }
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertTrue(outcome.stdout.hasPrefix("vmess://"), outcome.stdout)
        XCTAssertEqual(outcome.stderr, "")
        // The same photo as a replay frame through the daemon: only the daemon's own lines.
        let frames = dir + "/photo"
        XCTAssertEqual(mkdir(frames, 0o700), 0)
        XCTAssertEqual(symlink(photo, frames + "/0001.jpg"), 0)
        guard let run = try scangate(["run", "--camera", "replay:" + frames, "--fast", "--symbologies",
                                      "qr,databar,databar-exp,ean13,code128", "--output", "text"]) else { return }
        // (The daemon's single zbar pass does not read this photo's code; decode-image's later passes do.)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("stopped: 1 frames captured, 1 decoded"), run.stderr)
        XCTAssertFalse(run.stderr.contains("Assertion"), run.stderr)
        for line in run.stderrLines { XCTAssertTrue(line.hasPrefix("<"), "a line without a priority prefix: \(line)") }
    }

    /// A PNG with a signature, an IHDR claiming `width` x `height`, a token IDAT and IEND: enough for
    /// libpng to report the size it claims (the pixel data would not decode).
    private func pngHeaderOnly(width: UInt32, height: UInt32) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in body {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return be(UInt32(data.count)) + body + be(~crc)
        }
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", be(width) + be(height) + [8, 0, 0, 0, 0])
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
    }
}

#if canImport(Glibc)
import Glibc
#endif
@testable import Config
import Core
import Foundation
import Images
import Platform
@testable import Replay
@testable import Simulator
import XCTest
import Settings

/// Every file ScanGate reads: regular files only (opened without blocking), within a size limit checked
/// before and while reading; folders within an entry limit (issue 16).
final class BoundedInputTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private let small = FileSizeLimit(bytes: 1024, kind: "test files")

    private func expectError(_ body: () throws -> Void, file: StaticString = #filePath,
                             line: UInt = #line) -> BoundedFileError? {
        do {
            try body()
            XCTFail("expected an error", file: file, line: line)
            return nil
        } catch {
            guard let bounded = error as? BoundedFileError else {
                XCTFail("not a BoundedFileError: \(error)", file: file, line: line)
                return nil
            }
            return bounded
        }
    }

    private func makeFIFO(_ name: String) -> String {
        let path = dir + "/" + name
        XCTAssertEqual(mkfifo(path, 0o600), 0, "mkfifo \(path): \(Errno.current)")
        return path
    }

    /// Runs `body` on another thread; fails if it has not returned within 10 s (it would be blocked in
    /// open(2) on a FIFO: the FIFO is then opened for writing so the thread can end).
    private func withinDeadline<T: Sendable>(unblocking fifo: String? = nil, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        Thread.detachNewThread {
            box.value = body()
            done.signal()
        }
        if done.wait(timeout: .now() + 10) == .timedOut {
            XCTFail("did not return within 10 s (blocked)")
            if let fifo { let fd = open(fifo, O_WRONLY | O_NONBLOCK); if fd >= 0 { close(fd) } }
            _ = done.wait(timeout: .now() + 10)
            return nil
        }
        return box.value
    }

    // MARK: BoundedFile

    func testRegularFileWithinTheLimitIsReadWhole() throws {
        let path = dir + "/f.bin"
        let bytes = (0..<1024).map { UInt8($0 % 251) }
        try TestFiles.write(bytes: bytes, to: path)
        XCTAssertEqual(try BoundedFile.readAll(path: path, limit: small), bytes)
    }

    func testFileOverTheLimitIsRefusedBeforeReadingWithItsSizeAndTheLimit() throws {
        let path = dir + "/big.png"
        XCTAssertEqual(truncate(path, 0), -1)  // does not exist yet
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        // 9.1 GB, sparse: read, it would take minutes and all the memory.
        XCTAssertEqual(truncate(path, 9_800_000_000), 0)
        let error = expectError { _ = try BoundedFile.readAll(path: path, limit: .image) }
        XCTAssertEqual(error?.description, "cannot read \(path): it is 9.1 GB; image files are limited to 64 MB")
        // Just over: the short forms would look equal, so both are given in bytes.
        XCTAssertEqual(truncate(path, 1025), 0)
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: path, limit: small) }?.description,
                       "cannot read \(path): it is 1025 bytes; test files are limited to 1024 bytes (1 KB)")
    }

    func testFileThatGrowsPastTheLimitWhileReadIsRefused() throws {
        let path = dir + "/grows.conf"
        try TestFiles.write(bytes: [UInt8](repeating: 0x41, count: 100), to: path)
        let file = try BoundedFile.open(path, limit: small)
        defer { file.close() }
        XCTAssertEqual(file.sizeAtOpen, 100)
        // Another process appends after the open (and after its size check).
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: 0x42, count: 5000))
        try handle.close()
        let error = expectError { _ = try file.readAll() }
        XCTAssertEqual(error?.reason, .grew(limit: small))
        XCTAssertEqual(error?.description,
                       "cannot read \(path): it grew past 1 KB while it was read; test files are limited to 1 KB")
        // Never more than the limit was read.
        XCTAssertLessThanOrEqual(file.position, 1024)
    }

    func testFIFOWithoutAWriterIsRefusedAtOnce() throws {
        let fifo = makeFIFO("pipe.conf")
        let message = withinDeadline(unblocking: fifo) { () -> String? in
            do { _ = try BoundedFile.readAll(path: fifo, limit: .config); return nil } catch { return "\(error)" }
        }
        XCTAssertEqual(message, "cannot read \(fifo): it is a FIFO (named pipe), not a regular file")
    }

    func testSymbolicLinkIsFollowedOnlyToARegularFile() throws {
        let target = dir + "/real.txt"
        try TestFiles.write("hello", to: target)
        XCTAssertEqual(symlink(target, dir + "/link.txt"), 0)
        XCTAssertEqual(try BoundedFile.readAll(path: dir + "/link.txt", limit: small), Array("hello".utf8))

        XCTAssertEqual(symlink("/dev/zero", dir + "/zero.png"), 0)
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: dir + "/zero.png", limit: .image) }?.description,
                       "cannot read \(dir)/zero.png: it is a symbolic link to a character device, not a regular file")
        XCTAssertEqual(symlink(dir + "/nowhere", dir + "/dangling.png"), 0)
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: dir + "/dangling.png", limit: .image) }?.errno,
                       .noSuchFile)
    }

    func testDevicesDirectoriesAndSocketsAreRefused() throws {
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: "/dev/zero", limit: .image) }?.description,
                       "cannot read /dev/zero: it is a character device, not a regular file")
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: dir, limit: .config) }?.description,
                       "cannot read \(dir): it is a directory, not a regular file")
        let socketPath = dir + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in socketPath.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0, "bind: \(Errno.current)")
        XCTAssertEqual(expectError { _ = try BoundedFile.readAll(path: socketPath, limit: .config) }?.description,
                       "cannot read \(socketPath): it is a socket, not a regular file")
    }

    func testSizesAreWrittenAsPeopleReadThem() {
        XCTAssertEqual(ByteCount.text(0), "0 bytes")
        XCTAssertEqual(ByteCount.text(1), "1 byte")
        XCTAssertEqual(ByteCount.text(1023), "1023 bytes")
        XCTAssertEqual(ByteCount.text(1024), "1 KB")
        XCTAssertEqual(ByteCount.text(1536), "1.5 KB")
        XCTAssertEqual(ByteCount.text(64 << 20), "64 MB")
        XCTAssertEqual(ByteCount.text(256 << 10), "256 KB")
        XCTAssertEqual(ByteCount.text(9_800_000_000), "9.1 GB")
        XCTAssertEqual(ByteCount.text(150 << 20 | 1), "150 MB")
    }

    // MARK: folders

    func testFolderEntriesAreBoundedAndEveryEntryCounts() throws {
        for i in 0..<5 { try TestFiles.write("x", to: dir + "/note\(i).txt") }
        let four = DirectoryLimit(entries: 4, kind: "test folders")
        XCTAssertEqual(expectError { _ = try BoundedDirectory.names(dir, limit: four) }?.description,
                       "cannot read \(dir): it holds more than 4 entries; test folders are limited to 4")
        XCTAssertEqual(try BoundedDirectory.names(dir, limit: DirectoryLimit(entries: 5, kind: "test folders")).count, 5)
        // Through the replay folder: the listing is refused, naming the folder and the limit.
        try TestFiles.write("P5 1 1 255 x", to: dir + "/frame.pgm")
        XCTAssertThrowsError(try FrameDirectory.list(dir, limit: DirectoryLimit(entries: 5, kind: "replay folders"))) {
            XCTAssertEqual("\($0)", "cannot read folder \(dir): it holds more than 5 entries; replay folders are limited to 5")
        }
    }

    func testAFIFOOrDeviceNamedAsAReplayFrameRefusesTheReplay() throws {
        try FileBytes.write(PGMCodec.encode(LumaImage(width: 2, height: 2, pixels: [0, 1, 2, 3])), to: dir + "/0001.pgm")
        XCTAssertEqual(try FrameDirectory.list(dir), [dir + "/0001.pgm"])
        // A FIFO that is not named as a frame is not looked at.
        _ = makeFIFO("notes.txt")
        XCTAssertEqual(try FrameDirectory.list(dir), [dir + "/0001.pgm"])
        XCTAssertEqual(symlink("/dev/zero", dir + "/0002.pgm"), 0)
        XCTAssertThrowsError(try FrameDirectory.list(dir)) {
            XCTAssertEqual("\($0)", "cannot replay \(dir)/0002.pgm: it is a symbolic link to a character device, not a regular file (replay frames must be regular files)")
        }
        XCTAssertEqual(unlink(dir + "/0002.pgm"), 0)
        _ = makeFIFO("0003.png")
        XCTAssertThrowsError(try FrameDirectory.list(dir)) {
            XCTAssertEqual("\($0)", "cannot replay \(dir)/0003.png: it is a FIFO (named pipe), not a regular file (replay frames must be regular files)")
        }
        XCTAssertEqual(unlink(dir + "/0003.png"), 0)
        XCTAssertEqual(mkdir(dir + "/0004.jpg", 0o700), 0)
        XCTAssertThrowsError(try FrameDirectory.list(dir)) {
            XCTAssertEqual("\($0)", "cannot replay \(dir)/0004.jpg: it is a directory, not a regular file (replay frames must be regular files)")
        }
    }

    func testReplayOfAFIFOIsRefusedWithoutOpeningIt() throws {
        let fifo = makeFIFO("camera.y4m")
        let message = withinDeadline(unblocking: fifo) { () -> String? in
            do { _ = try ReplaySource(path: fifo, settings: CaptureSettings()); return nil } catch { return "\(error)" }
        }
        XCTAssertEqual(message, "cannot read \(fifo): it is a FIFO (named pipe), not a regular file (want a .y4m file or a folder of frames)")
        // The folder form of the same path: not a directory, said in words.
        XCTAssertThrowsError(try FrameDirectory.list(fifo)) {
            XCTAssertEqual("\($0)", "cannot read folder \(fifo): it is a FIFO (named pipe), not a directory")
        }
    }

    // MARK: Y4M

    func testY4MFrameSizeIsBoundedBeforeAnythingIsAllocated() throws {
        XCTAssertThrowsError(try Y4MHeader.parse(line: Array("YUV4MPEG2 W16384 H16384 Cmono".utf8), name: "big.y4m")) {
            XCTAssertEqual("\($0)", "cannot read big.y4m: Y4M frame size 16384x16384 is not supported (frames are limited to 67108864 pixels, e.g. 8192x8192)")
        }
        XCTAssertEqual(try Y4MHeader.parse(line: Array("YUV4MPEG2 W8192 H8192 Cmono".utf8), name: "ok.y4m").width, 8192)
    }

    func testY4MChromaIsSkippedAndAHugeSparseRecordingIsRefused() throws {
        // 4:4:4 with alpha: three planes after the luma, skipped through the small buffer.
        let path = dir + "/c444.y4m"
        var bytes = Array("YUV4MPEG2 W4 H2 F10:1 C444alpha\n".utf8)
        for frame in 0..<3 {
            bytes += Array("FRAME\n".utf8) + [UInt8](repeating: UInt8(frame), count: 8) + [UInt8](repeating: 0xEE, count: 24)
        }
        try TestFiles.write(bytes: bytes, to: path)
        let reader = try Y4MReader(path: path)
        defer { reader.close() }
        XCTAssertEqual(try reader.nextLuma(), [UInt8](repeating: 0, count: 8))
        XCTAssertEqual(try reader.nextLuma(), [UInt8](repeating: 1, count: 8))
        XCTAssertEqual(try reader.nextLuma(), [UInt8](repeating: 2, count: 8))
        XCTAssertNil(try reader.nextLuma())

        let sparse = dir + "/sparse.y4m"
        try TestFiles.write("YUV4MPEG2 W640 H480 Cmono\n", to: sparse)
        XCTAssertEqual(truncate(sparse, 100 << 30), 0)
        XCTAssertThrowsError(try Y4MReader(path: sparse)) {
            XCTAssertEqual("\($0)", "cannot read \(sparse): it is 100 GB; Y4M recordings are limited to 64 GB")
        }
    }

    // MARK: config and scenario

    func testConfigFileIsBounded() throws {
        let fifo = makeFIFO("scangate.conf")
        let message = withinDeadline(unblocking: fifo) { () -> String? in
            do { _ = try ConfigFile.load(path: fifo); return nil } catch { return "\(error)" }
        }
        XCTAssertEqual(message, "cannot read config file \(fifo): it is a FIFO (named pipe), not a regular file")
        let big = dir + "/big.conf"
        try TestFiles.write(String(repeating: "# a comment line that is long enough to add up quickly\n", count: 5000), to: big)
        XCTAssertThrowsError(try ConfigFile.load(path: big)) {
            XCTAssertEqual("\($0)", "cannot read config file \(big): it is 268 KB; config files are limited to 256 KB")
        }
    }

    func testScenarioFileAndItsCodesAreBounded() throws {
        let fifo = makeFIFO("door.scenario")
        let message = withinDeadline(unblocking: fifo) { () -> String? in
            do { _ = try SimulatedCamera(spec: fifo, settings: CaptureSettings()); return nil } catch { return "\(error)" }
        }
        XCTAssertEqual(message, "cannot read \(fifo): it is a FIFO (named pipe), not a regular file")

        let defaults = ScenarioParser.Defaults(width: 640, height: 480, fps: 15)
        let many = String(repeating: "code qr \"A\" frames 0-1\n", count: ScenarioParser.maximumCodes + 1)
        XCTAssertThrowsError(try ScenarioParser.parse(text: many, name: "many.scenario", defaults: defaults)) {
            XCTAssertEqual("\($0)", "many.scenario:257: too many codes; a scenario holds at most 256 `code` lines")
        }
        // Each of these fits the 4096x4096 frame; three of them are more pixels than the budget allows.
        let line = "code code128 \"\(String(repeating: "0123456789", count: 36))\" frames 0-1 module 2 height 3900\n"
        let one = try ScenarioParser.parse(text: "size 4096x4096\n" + line, name: "one.scenario", defaults: defaults)
        let size = try CodePatch.size(of: one.codes[0])
        XCTAssertLessThanOrEqual(size.width, 4096)
        XCTAssertGreaterThan(2 * size.width * size.height, ScenarioParser.maximumCodePixels / 2)
        XCTAssertLessThanOrEqual(2 * size.width * size.height, ScenarioParser.maximumCodePixels)
        let big = "size 4096x4096\n" + String(repeating: line, count: 3)
        XCTAssertThrowsError(try ScenarioParser.parse(text: big, name: "big.scenario", defaults: defaults)) {
            XCTAssertEqual("\($0)", "big.scenario:4: the codes up to this line take \(3 * size.width * size.height) pixels; a scenario's codes are limited to 33554432 pixels in all (two 4096x4096 frames)")
        }
        // The size checked before drawing is the size drawn (rotation included).
        let rotated = try ScenarioParser.parse(text: "code qr \"HELLO\" frames 0-3 module 3 rotate 30\ncode code128 \"C\" frames 1-2 rotate 10 height 20",
                                               name: "r.scenario", defaults: defaults)
        for code in rotated.codes {
            let patch = try CodePatch(code, background: 160)
            let size = try CodePatch.size(of: code)
            XCTAssertEqual(size.width, patch.image.width)
            XCTAssertEqual(size.height, patch.image.height)
        }
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

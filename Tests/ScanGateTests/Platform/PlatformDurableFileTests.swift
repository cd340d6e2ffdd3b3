import Foundation
import Platform
import XCTest

/// FileDescriptor's positional reads and writes, syncs, truncation and locks.
final class FileDescriptorDurableCallsTests: XCTestCase {
    func open(_ path: String) throws -> FileDescriptor {
        try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600).get("open", path)
    }

    func testPositionalWritesAndReadsLeaveTheOffsetAloneAndReadShortOnlyAtTheEnd() throws {
        let path = try TestFiles.temporaryDirectory() + "/f"
        let fd = try open(path)
        defer { _ = fd.close() }
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        try fd.writeAll(toAbsoluteOffset: 100, bytes).get("pwrite", path)
        try fd.writeAll(toAbsoluteOffset: 0, [1, 2, 3]).get("pwrite", path)
        XCTAssertEqual(lseek(fd.rawValue, 0, SEEK_CUR), 0, "pwrite leaves the file offset alone")
        XCTAssertEqual(try fd.readAll(fromAbsoluteOffset: 100, count: bytes.count).get("pread", path), bytes)
        XCTAssertEqual(try fd.readAll(fromAbsoluteOffset: 0, count: 4).get("pread", path), [1, 2, 3, 0], "the hole reads as zeros")
        XCTAssertEqual(try fd.readAll(fromAbsoluteOffset: 10_090, count: 50).get("pread", path).count, 10, "short only at the end")
        XCTAssertEqual(try fd.readAll(fromAbsoluteOffset: 20_000, count: 5).get("pread", path), [])
        try fd.sync().get("fsync", path)
        try fd.dataSync(retryOnInterrupt: false).get("fdatasync", path)
        try fd.truncate(to: 3).get("ftruncate", path)
        XCTAssertEqual(try fd.readAll(fromAbsoluteOffset: 0, count: 100).get("pread", path), [1, 2, 3])
        XCTAssertEqual(try fd.status().get("fstat", path).st_size, 3)
    }

    func testAnErrorIsTheErrnoAndNamesTheCallAndTheFile() throws {
        let path = try TestFiles.temporaryDirectory() + "/f"
        let fd = try FileDescriptor.open(path, O_RDONLY | O_CREAT, mode: 0o600).get("open", path)
        defer { _ = fd.close() }
        guard case .failure(let e) = fd.writeAll(toAbsoluteOffset: 0, [1]) else { return XCTFail("a read-only descriptor wrote") }
        XCTAssertEqual(e.rawValue, EBADF)
        XCTAssertThrowsError(try fd.truncate(to: 0).get("ftruncate", path)) {
            XCTAssertTrue("\($0)".hasPrefix("ftruncate \(path): "), "\($0)")
        }
    }

    func testLocksExcludeOtherOpenFilesAndSharedOnesShare() throws {
        let path = try TestFiles.temporaryDirectory() + "/lock"
        let a = try open(path), b = try open(path)
        defer { _ = a.close(); _ = b.close() }
        XCTAssertEqual(try a.lock(.exclusive, nonBlocking: true).get("flock", path), true)
        XCTAssertEqual(try b.lock(.exclusive, nonBlocking: true).get("flock", path), false, "held by the other open file")
        XCTAssertEqual(try b.lock(.shared, nonBlocking: true).get("flock", path), false)
        try a.unlock().get("flock", path)
        XCTAssertEqual(try a.lock(.shared, nonBlocking: true).get("flock", path), true)
        XCTAssertEqual(try b.lock(.shared, nonBlocking: true).get("flock", path), true, "shared locks share")
        XCTAssertEqual(try b.tryLockExclusive().get("flock", path), false)
        try a.unlock().get("flock", path)
        XCTAssertEqual(try b.lock(.exclusive).get("flock", path), true, "a blocking lock is taken once it is free")
    }

    func testADirectoryIsSyncedAndAMissingOneIsNamed() throws {
        let dir = try TestFiles.temporaryDirectory()
        XCTAssertNoThrow(try Directory.sync(dir))
        XCTAssertNoThrow(try Directory.syncParent(of: dir + "/file"))
        XCTAssertThrowsError(try Directory.sync(dir + "/missing")) {
            XCTAssertTrue("\($0)".contains("open directory \(dir)/missing"), "\($0)")
        }
        XCTAssertEqual(FilePath.parent(of: "/a/b/"), "/a")
        XCTAssertEqual(FilePath.parent(of: "/a"), "/")
        XCTAssertEqual(FilePath.parent(of: "a"), ".")
        XCTAssertEqual(FilePath.name(of: "/a/b.txt"), "b.txt")
    }
}

/// AtomicFile: the whole file or none of it, the mode asked for, no temporary file left behind.
final class AtomicFileTests: XCTestCase {
    var dir = ""
    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }

    func read(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    func testReplaceWritesTheWholeFileWithItsModeAndLeavesNoTemporaryFile() throws {
        let path = dir + "/key"
        let saved = umask(0o077)
        defer { umask(saved) }
        try AtomicFile.replace(path, with: Array("old\n".utf8), mode: 0o644)
        XCTAssertEqual(mode(path), 0o644, "the mode asked for, whatever the umask")
        try AtomicFile.replace(path, with: Array("new\n".utf8), mode: 0o600)
        XCTAssertEqual(try read(path), "new\n")
        XCTAssertEqual(mode(path), 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["key"])
    }

    /// A write that fails (a full disk, for real: RLIMIT_FSIZE) leaves the old content and no temporary file.
    func testAFailedWriteLeavesTheOldContentAndNoTemporaryFile() throws {
        let path = dir + "/state"
        try AtomicFile.replace(path, with: Array("old\n".utf8), mode: 0o644)
        let result = try withFileSizeLimit(10) {
            Result { () throws(AtomicFile.Failure) in try AtomicFile.replace(path, with: [UInt8](repeating: 0x41, count: 100), mode: 0o644) }
        }
        guard case .failure(let failure) = result else { return XCTFail("the write cannot have succeeded") }
        XCTAssertFalse(failure.replaced)
        XCTAssertEqual(failure.errno.rawValue, EFBIG)
        XCTAssertTrue(failure.description.hasPrefix("write \(path).tmp: "), failure.description)
        XCTAssertEqual(try read(path), "old\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["state"], "no temporary file")
    }

    /// `body` with every write past `bytes` of a file failing with EFBIG: a full disk, for real.
    func withFileSizeLimit<T>(_ bytes: Int, _ body: () -> T) throws -> T {
        let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
        var saved = rlimit()
        guard getrlimit(resource, &saved) == 0 else { throw Errno.current }
        var limited = saved
        limited.rlim_cur = rlim_t(bytes)
        let handler = signal(SIGXFSZ, SIG_IGN)
        defer {
            setrlimit(resource, &saved)
            signal(SIGXFSZ, handler)
        }
        guard setrlimit(resource, &limited) == 0 else { throw Errno.current }
        return body()
    }

    /// A failed rename (the name is a non-empty directory) removes the temporary file too.
    func testAFailedRenameRemovesTheTemporaryFile() throws {
        let path = dir + "/taken"
        XCTAssertEqual(mkdir(path, 0o700), 0)
        try TestFiles.write("x", to: path + "/inside")
        XCTAssertThrowsError(try AtomicFile.replace(path, with: [1], mode: 0o600)) {
            XCTAssertTrue("\($0)".hasPrefix("rename to \(path) \(path).tmp: "), "\($0)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["taken"])
    }

    /// A symbolic link or a hard link planted as the temporary file is removed, never written through.
    func testAPlantedLinkAsTheTemporaryFileIsNeverWrittenThrough() throws {
        let path = dir + "/file", victim = dir + "/victim", other = dir + "/other"
        try TestFiles.write("victim", to: victim)
        try TestFiles.write("other", to: other)
        XCTAssertEqual(symlink(victim, path + ".tmp"), 0)
        try AtomicFile.replace(path, with: Array("one".utf8), mode: 0o600)
        XCTAssertEqual(link(other, path + ".tmp"), 0)
        try AtomicFile.replace(path, with: Array("two".utf8), mode: 0o600)
        XCTAssertEqual(try read(victim), "victim")
        XCTAssertEqual(try read(other), "other")
        XCTAssertEqual(try read(path), "two")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["file", "other", "victim"])
    }

    /// A failed directory fsync after the rename is reported as such: the new content is in place.
    func testAFailedDirectorySyncAfterTheRenameSaysTheFileWasReplaced() throws {
        let path = dir + "/file"
        XCTAssertThrowsError(try AtomicFile.replace(path, with: Array("new".utf8), mode: 0o600,
                                                    faults: AtomicFile.Faults(syncDirectory: { _ in .ioError }))) { error in
            guard let failure = error as? AtomicFile.Failure else { return XCTFail("\(error)") }
            XCTAssertTrue(failure.replaced)
            XCTAssertEqual(failure.description, "fsync directory \(self.dir): Input/output error (EIO)")
        }
        XCTAssertEqual(try read(path), "new")
    }

    func testCreateNeverReplacesAnExistingFile() throws {
        let path = dir + "/k.key"
        try AtomicFile.create(path, with: Array("first".utf8), mode: 0o600)
        XCTAssertEqual(mode(path), 0o600)
        XCTAssertThrowsError(try AtomicFile.create(path, with: Array("second".utf8), mode: 0o600)) { error in
            XCTAssertTrue((error as? AtomicFile.Failure)?.exists ?? false, "\(error)")
        }
        XCTAssertEqual(try read(path), "first")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["k.key"], "no temporary file")
    }

    func testANonDurableReplaceIsStillWhole() throws {
        let path = dir + "/m.prom"
        try AtomicFile.replace(path, with: Array("a 1\n".utf8), mode: 0o644, durable: false)
        XCTAssertEqual(try read(path), "a 1\n")
        XCTAssertEqual(mode(path), 0o644)
    }
}

/// RecordLog and RecordScanner over a small test format: "R" + length byte + payload + a CRC-8-ish sum.
final class RecordLogTests: XCTestCase {
    struct Framing: RecordFraming {
        func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame {
            guard bytes.count - offset >= 2 else { return .incomplete }
            guard bytes[offset] == 0x52 else { return .invalid }
            let size = 3 + Int(bytes[offset + 1])
            guard bytes.count - offset >= size else { return .incomplete }
            let sum = bytes[(offset + 2)..<(offset + size - 1)].reduce(UInt8(0x5A)) { $0 &+ $1 }
            return sum == bytes[offset + size - 1] ? .record(size: size) : .invalid
        }
    }

    static func record(_ payload: [UInt8]) -> [UInt8] {
        [0x52, UInt8(payload.count)] + payload + [payload.reduce(UInt8(0x5A)) { $0 &+ $1 }]
    }

    func scan(_ bytes: [UInt8]) -> RecordScan { bytes.withUnsafeBytes { RecordScanner.scan($0, framing: Framing()) } }

    func testATornTailIsFoundAndCutOff() throws {
        let whole = Self.record([1, 2, 3]) + Self.record([4, 5])
        let torn = whole + Array(Self.record([6, 7, 8, 9]).prefix(4))
        let result = scan(torn)
        XCTAssertEqual(result.records, [0..<6, 6..<11])
        XCTAssertEqual(result.damaged, [])
        XCTAssertEqual(result.tail, 11)
        XCTAssertEqual(result.firstProblem, 11)
        let path = try TestFiles.temporaryDirectory() + "/log"
        try TestFiles.write(bytes: torn, to: path)
        let log = try RecordLog.open(path, mode: 0o600, create: false, maxBytes: 1024)
        XCTAssertEqual(log.size, torn.count, "the whole file until it is scanned")
        try log.cut(to: result.validEnd).get("cut", path)
        try log.append(Self.record([10])).get()
        XCTAssertEqual(scan(try log.read(from: 0).get()).records.count, 3, "the next record follows the last whole one")
    }

    func testACorruptMiddleRecordIsSkippedToTheNextValidOne() {
        var bytes = Self.record([1, 2, 3]) + Self.record([4, 5, 6, 7]) + Self.record([8]) + Self.record([9, 9])
        bytes[8] ^= 0xFF   // in the second record's payload
        let result = scan(bytes)
        XCTAssertEqual(result.records, [0..<6, 13..<17, 17..<22])
        XCTAssertEqual(result.damaged, [6..<13])
        XCTAssertNil(result.tail)
        XCTAssertEqual(result.firstProblem, 6)
        // Garbage between records (an outside write) is skipped the same way.
        let garbage = Self.record([1]) + [0xFF, 0x52, 0x00] + Self.record([2])
        XCTAssertEqual(scan(garbage).records, [0..<4, 7..<11])
        XCTAssertEqual(scan(garbage).damaged, [4..<7])
    }

    func testAppendsStopAtTheBoundAndAFailedWriteIsCutBack() throws {
        let path = try TestFiles.temporaryDirectory() + "/log"
        let log = try RecordLog.open(path, mode: 0o600, create: true, maxBytes: 20)
        try log.append(Self.record([UInt8](repeating: 1, count: 10))).get()
        guard case .failure(.full(let limit)) = log.append(Self.record([UInt8](repeating: 2, count: 10))) else {
            return XCTFail("past the bound")
        }
        XCTAssertEqual(limit, 20)
        XCTAssertEqual(log.size, 13)
        guard case .failure(.write(let e, let cutBack)) = log.append(Self.record([3]), faults: WriteFaults(write: { _ in .noSpace })) else {
            return XCTFail("the write fault")
        }
        XCTAssertEqual(e, .noSpace)
        XCTAssertNil(cutBack)
        try log.append(Self.record([4])).get()
        XCTAssertEqual(scan(try log.read(from: 0).get()).records, [0..<13, 13..<17])
        // A file over the bound is refused at open.
        XCTAssertThrowsError(try RecordLog.open(path, mode: 0o600, create: false, maxBytes: 16)) {
            guard case RecordLog.OpenError.tooLarge(17) = $0 else { return XCTFail("\($0)") }
        }
    }

    func testReplaceCompactsAndReopensAndAFIFOIsRefusedWithoutWaiting() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/log"
        let log = try RecordLog.open(path, mode: 0o600, create: true, maxBytes: 1024)
        for n in 0..<5 { try log.append(Self.record([UInt8(n)])).get() }
        try log.replace(with: Self.record([9]))
        XCTAssertEqual(log.size, 4)
        try log.append(Self.record([10])).get()
        XCTAssertEqual(scan(try log.read(from: 0).get()).records, [0..<4, 4..<8])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["log"])
        XCTAssertEqual(mkfifo(dir + "/fifo", 0o600), 0)
        XCTAssertThrowsError(try RecordLog.open(dir + "/fifo", mode: 0o600, create: false, maxBytes: 1024)) {
            guard case RecordLog.OpenError.notRegular = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(symlink(path, dir + "/link"), 0)
        XCTAssertThrowsError(try RecordLog.open(dir + "/link", mode: 0o600, create: false, maxBytes: 1024)) {
            guard case RecordLog.OpenError.symbolicLink = $0 else { return XCTFail("\($0)") }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
@testable import Platform
import XCTest

/// The inotify wrapper against the kernel: what a watched directory reports, and errors that name it.
final class InotifyTests: XCTestCase {
    func testAFileWrittenAndRenamedIntoPlaceIsReportedByName() throws {
        let dir = try TestFiles.temporaryDirectory()
        let watch = try InotifyWatch(directory: dir)
        defer { watch.close() }
        XCTAssertEqual(try watch.drain(), [], "nothing happened yet")
        try TestFiles.write("one", to: dir + "/.a.tmp")
        XCTAssertEqual(rename(dir + "/.a.tmp", dir + "/a.jwt"), 0)
        var events: [InotifyWatch.Event] = []
        waitUntil(5, failure: "the rename: \(events)") {
            events += (try? watch.drain()) ?? []
            return events.contains { $0.name == "a.jwt" && $0.mask & UInt32(IN_MOVED_TO) != 0 }
        }
        XCTAssertTrue(events.contains { $0.name == ".a.tmp" && $0.mask & UInt32(IN_CLOSE_WRITE) != 0 }, "\(events)")
        XCTAssertEqual(rmdir(dir), -1, "not empty")
        XCTAssertEqual(unlink(dir + "/a.jwt"), 0)
        XCTAssertEqual(rmdir(dir), 0)
        waitUntil(5, failure: "the directory's removal: \(events)") {
            events += (try? watch.drain()) ?? []
            return events.contains(where: \.watchEnded)
        }
    }

    func testAMissingDirectoryIsAnErrorNamingIt() {
        XCTAssertThrowsError(try InotifyWatch(directory: "/nonexistent/lists")) { error in
            XCTAssertEqual("\(error)", "inotify_add_watch /nonexistent/lists: No such file or directory (ENOENT)")
        }
    }

    /// Several events in one read, each name NUL-padded; a truncated tail is left alone.
    func testParseReadsPackedEvents() {
        func event(_ mask: UInt32, _ name: String, padTo: Int) -> [UInt8] {
            var name = Array(name.utf8)
            name += [UInt8](repeating: 0, count: padTo - name.count)
            return withUnsafeBytes(of: Int32(1)) { Array($0) } + withUnsafeBytes(of: mask) { Array($0) }
                + withUnsafeBytes(of: UInt32(0)) { Array($0) } + withUnsafeBytes(of: UInt32(name.count)) { Array($0) } + name
        }
        let bytes = event(UInt32(IN_CLOSE_WRITE), "list.jwt", padTo: 16) + event(UInt32(IN_Q_OVERFLOW), "", padTo: 0)
            + Array(event(UInt32(IN_CREATE), "cut", padTo: 16).prefix(20))
        XCTAssertEqual(InotifyWatch.parse(bytes[...]), [.init(name: "list.jwt", mask: UInt32(IN_CLOSE_WRITE)), .init(name: "", mask: UInt32(IN_Q_OVERFLOW))])
    }
}

import XCTest
import Foundation

/// The suite runs hundreds of child processes in one test process; a runner that left descriptors behind
/// would take later tests past FD_SETSIZE (1024), where libmosquitto's select() refuses a socket.
final class TestProcessDescriptorTests: XCTestCase {
    func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }

    func testRunningAChildLeavesNoDescriptorBehind() throws {
        for _ in 0..<3 { _ = try ScangateProcess.run(["--version"]) }  // one-time set-up (dispatch threads)
        let before = openDescriptors()
        for _ in 0..<30 { _ = try ScangateProcess.run(["--version"], stdin: "x") }
        let after = openDescriptors()
        XCTAssertLessThanOrEqual(after - before, 3, "descriptors before \(before), after 30 runs \(after)")
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Platform
import XCTest

/// The bench and the soak start children (the daemon, Debian's mosquitto) from a process whose threads
/// block SIGTERM for its signal thread: the child must start with those signals deliverable.
final class ChildProcessTests: XCTestCase {
    func testAChildStartedWhileSIGTERMIsBlockedStillEndsOnSIGTERM() throws {
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        var previous = sigset_t()
        XCTAssertEqual(pthread_sigmask(SIG_BLOCK, &block, &previous), 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        let child = try ChildProcess.spawn("/bin/sleep", ["60"], stdout: .devNull, stderr: .devNull)
        defer { if child.poll() == .running { child.signal(SIGKILL); _ = child.wait() } }
        XCTAssertTrue(child.signal(SIGTERM))
        var state = ChildProcess.State.running
        XCTAssertTrue(waitUntil(10) {
            state = child.poll()
            return state != .running
        }, "the child still runs after SIGTERM: it inherited the blocked mask")
        XCTAssertEqual(state, .exited(128 + SIGTERM), "ended by SIGTERM, as a shell shows it")
    }

    func testItsStdoutGoesWhereItWasSentAndAMissingProgramIsNamed() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let child = try ChildProcess.spawn("/bin/echo", ["hello"], stdout: .descriptor(fds[1]), stderr: .devNull,
                                           closeInChild: [fds[0]])
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fds[0], &buffer, buffer.count)
        close(fds[0])
        XCTAssertEqual(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self), "hello\n")
        XCTAssertEqual(child.wait(), 0)
        XCTAssertNil(child.wait(), "already reaped")

        XCTAssertThrowsError(try ChildProcess.spawn("/nonexistent/scangate-helper", [])) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/scangate-helper"), "\(error)")
        }
    }
}

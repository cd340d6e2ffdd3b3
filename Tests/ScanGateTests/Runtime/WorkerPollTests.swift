#if canImport(Glibc)
import Glibc
#endif
import Core
import Dispatch
import Platform
import Runtime
import XCTest

/// A pollable worker: a body blocked in poll(2) on a descriptor of its own (a port, a socket) wakes for
/// a message, for a stop, and for its descriptor.
final class WorkerPollTests: XCTestCase {
    /// A pipe the test holds: the body polls its read end, which stays silent unless the test writes.
    final class SilentPipe: Sendable {
        let wake: WakePipe
        init() throws { wake = try WakePipe(purpose: "test") }
        var readFD: Int32 { wake.readFD }
        func write() { wake.signal() }
    }

    final class Events: Sendable {
        private let items = PosixMutex<[String]>([])
        private let signal = DispatchSemaphore(value: 0)
        func append(_ s: String) {
            items.withLock { $0.append(s) }
            signal.signal()
        }
        var all: [String] { items.withLock { $0 } }
        /// Waits (bounded) until `count` events were recorded.
        func wait(for count: Int) -> Bool {
            let end = MonotonicInstant.now().adding(milliseconds: 10_000)
            while all.count < count {
                if signal.wait(timeout: .now() + .milliseconds(100)) == .timedOut, MonotonicInstant.now() > end { return false }
            }
            return true
        }
    }

    private func startPolling(_ silent: SilentPipe, _ events: Events) throws -> Worker<String> {
        try Worker<String>(name: "test-poll", capacity: 4, overflow: .refuse, pollable: true) { inbox in
            events.append("polling")
            while !inbox.isStopping {
                do throws(SystemError) {
                    let seen = try inbox.poll([PollRequest(fd: silent.readFD, events: Int16(POLLIN))], until: nil)
                    if seen.revents.first.map({ $0 & Int16(POLLIN) != 0 }) == true {
                        silent.wake.drain()
                        events.append("fd readable")
                    }
                    for m in inbox.takeAll() { events.append("message \(m)") }
                } catch {
                    events.append("error \(error)")
                    return
                }
            }
            events.append("stopped")
        }
    }

    func testABodyBlockedInPollWakesForAMessageAndItsDescriptor() throws {
        let silent = try SilentPipe()
        let events = Events()
        let worker = try startPolling(silent, events)
        XCTAssertTrue(events.wait(for: 1))
        XCTAssertNotNil(worker.post("one"))
        XCTAssertTrue(events.wait(for: 2), "\(events.all)")
        XCTAssertEqual(events.all, ["polling", "message one"])
        silent.write()
        XCTAssertTrue(events.wait(for: 3), "\(events.all)")
        XCTAssertEqual(events.all.last, "fd readable")
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
    }

    func testABodyBlockedInPollOnASilentDescriptorStopsInTime() throws {
        let silent = try SilentPipe()
        let events = Events()
        let forced = PosixMutex(0)
        let worker = try Worker<String>(name: "test-poll-stop", capacity: 1, overflow: .refuse, pollable: true,
                                        forceInactive: { forced.withLock { $0 += 1 } }) { inbox in
            events.append("polling")
            while !inbox.isStopping {
                _ = try? inbox.poll([PollRequest(fd: silent.readFD, events: Int16(POLLIN))], until: nil)
            }
            events.append("stopped")
        }
        XCTAssertTrue(events.wait(for: 1))
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)), "the stop woke the poll")
        XCTAssertEqual(events.all, ["polling", "stopped"])
        XCTAssertEqual(forced.withLock { $0 }, 1)
    }

    func testThePollDeadlinePassesWithNothingReady() throws {
        let silent = try SilentPipe()
        let events = Events()
        let worker = try Worker<String>(name: "test-poll-time", capacity: 1, overflow: .refuse, pollable: true) { inbox in
            if let seen = try? inbox.poll([PollRequest(fd: silent.readFD, events: Int16(POLLIN))],
                                          until: .now().adding(milliseconds: 20)) {
                events.append(seen.timedOut ? "timed out" : "woken")
            }
            inbox.wait(until: nil)
        }
        XCTAssertTrue(events.wait(for: 1))
        XCTAssertEqual(events.all, ["timed out"])
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
    }

    func testAPlainWorkerRefusesToPoll() throws {
        let events = Events()
        let worker = try Worker<String>(name: "test-no-poll", capacity: 1, overflow: .refuse) { inbox in
            XCTAssertNil(inbox.wakeDescriptor)
            do throws(SystemError) {
                _ = try inbox.poll([], until: .now())
                events.append("polled")
            } catch {
                events.append("\(error.errno == .invalidArgument)")
            }
        }
        XCTAssertTrue(events.wait(for: 1))
        XCTAssertEqual(events.all, ["true"])
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
    }
}

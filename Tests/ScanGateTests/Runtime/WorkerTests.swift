import Core
import Dispatch
import Platform
import Runtime
import XCTest

/// The one worker every output and feedback device runs on: a bounded mailbox that never makes a caller
/// wait, a stop that always returns by its deadline with the outputs driven inactive, a bounded drain,
/// and a group that stops in reverse order.
final class WorkerTests: XCTestCase {
    /// A gate the body waits at, so a test holds it stuck for as long as it needs.
    final class Gate: Sendable {
        private let open = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        func pass() {
            entered.signal()
            open.wait()
        }
        func release() { open.signal() }
    }

    final class Recorder<T: Sendable>: Sendable {
        private let items = PosixMutex<[T]>([])
        func append(_ item: T) { items.withLock { $0.append(item) } }
        var all: [T] { items.withLock { $0 } }
    }

    func testAFullDropOldestMailboxDropsTheOldestAndCountsIt() throws {
        let gate = Gate()
        let seen = Recorder<Int>()
        let worker = try Worker<Int>(name: "test-drop", capacity: 3, overflow: .dropOldest) { inbox in
            while case .message(let m) = inbox.next() {
                if m == 0 { gate.pass() }
                seen.append(m)
            }
        }
        worker.post(0)
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 10), .success)
        // The body holds message 0; 1...5 arrive at a mailbox of 3.
        let results = (1...5).map { worker.post($0) }
        XCTAssertEqual(results, [.queued, .queued, .queued, .queuedDroppingOldest, .queuedDroppingOldest])
        XCTAssertEqual(worker.dropped, 2)
        XCTAssertEqual(worker.waiting, 3)
        gate.release()
        XCTAssertTrue(worker.drain(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertEqual(seen.all, [0, 3, 4, 5])
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
    }

    func testAFullRefusingMailboxRefusesTheNewestAndCountsIt() throws {
        let gate = Gate()
        let seen = Recorder<Int>()
        let worker = try Worker<Int>(name: "test-refuse", capacity: 2, overflow: .refuse) { inbox in
            while case .message(let m) = inbox.next() {
                if m == 0 { gate.pass() }
                seen.append(m)
            }
        }
        worker.post(0)
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 10), .success)
        XCTAssertEqual((1...4).map { worker.post($0) }, [.queued, .queued, .full, .full])
        XCTAssertEqual(worker.dropped, 2)
        gate.release()
        XCTAssertTrue(worker.drain(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertEqual(seen.all, [0, 1, 2])
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertEqual(worker.post(9), .stopping, "no new work after stop")
    }

    func testStopFinishesWhatIsInHandThenCallsForceInactive() throws {
        let gate = Gate()
        let seen = Recorder<Int>()
        let forced = Recorder<Bool>()
        let worker = try Worker<Int>(name: "test-stop", capacity: 8, overflow: .refuse,
                                     forceInactive: { forced.append(true) }) { inbox in
            while case .message(let m) = inbox.next() {
                if m == 0 { gate.pass() }
                seen.append(m)
            }
        }
        worker.post(0)
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 10), .success)
        worker.post(1)
        worker.post(2)
        DispatchQueue.global().async { gate.release() }
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertEqual(seen.all, [0, 1, 2], "what was posted before stop is finished")
        XCTAssertEqual(forced.all.count, 1, "the outputs are driven inactive on the normal path too")
    }

    func testStopReturnsByItsDeadlineWhenTheBodyIsStuckAndForcesTheOutputsInactive() throws {
        let gate = Gate()
        let forced = Recorder<Bool>()
        let log = LogCapture()
        let worker = try Worker<Int>(name: "test-stuck", capacity: 1, overflow: .refuse, logger: log.logger,
                                     forceInactive: { forced.append(true) }) { inbox in
            while case .message = inbox.next() { gate.pass() }   // a driver call that never returns
        }
        worker.post(1)
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 10), .success)
        XCTAssertFalse(worker.stop(deadline: .now().adding(milliseconds: 100)))
        XCTAssertEqual(forced.all.count, 1, "forceInactive runs when the deadline passes")
        XCTAssertTrue(log.all.contains { $0.contains("test-stuck: did not stop within its deadline") }, "\(log.all)")
        gate.release()   // the detached thread ends on its own
    }

    func testDrainWaitsForABusyBodyAndIsBounded() throws {
        let busy = PosixMutex(true)
        let worker = try Worker<Int>(name: "test-drain", capacity: 4, overflow: .refuse) { inbox in
            while !inbox.isStopping {
                _ = inbox.takeAll()
                let stillBusy = busy.withLock { $0 }
                inbox.setBusy(stillBusy)
                inbox.wait(until: stillBusy ? .now().adding(milliseconds: 5) : nil)
            }
        }
        worker.post(1)
        XCTAssertFalse(worker.drain(deadline: .now().adding(milliseconds: 50)), "busy: not drained, and drain returns")
        busy.withLock { $0 = false }
        XCTAssertTrue(worker.drain(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertTrue(worker.drain(deadline: .now()), "a stopped worker is drained")
    }

    func testNextTimesOutAndWakeWakesTheBody() throws {
        let events = Recorder<String>()
        let worker = try Worker<Never>(name: "test-wake", capacity: 1, overflow: .refuse) { inbox in
            while !inbox.isStopping {
                events.append(inbox.wait(until: .now().adding(milliseconds: 60_000)) ? "woken" : "timeout")
            }
        }
        XCTAssertTrue(worker.wake())
        XCTAssertTrue(waitUntil { events.all.contains("woken") })
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)))
        XCTAssertFalse(worker.wake(), "false once stopping")
        XCTAssertFalse(events.all.contains("timeout"))
    }

    /// Two workers that wake each other (MQTT's spool and session): each is woken through a pipe made
    /// before it, by whoever holds the pipe, and its own stop still wakes it.
    func testAWorkerWokenThroughAPipeMadeBeforeIt() throws {
        let pipe = try WakePipe(purpose: "test-pipe")
        let events = Recorder<String>()
        let worker = try Worker<Never>(name: "test-pipe", capacity: 1, overflow: .refuse, wakePipe: pipe) { inbox in
            while !inbox.isStopping {
                events.append(inbox.wait(until: .now().adding(milliseconds: 60_000)) ? "woken" : "timeout")
            }
            events.append("stopped")
        }
        XCTAssertTrue(pipe.signal())
        XCTAssertTrue(waitUntil { events.all.contains("woken") }, "the holder of the pipe wakes the body")
        XCTAssertTrue(worker.stop(deadline: .now().adding(milliseconds: 10_000)), "the stop wakes it through the same pipe")
        XCTAssertEqual(events.all.last, "stopped")
        XCTAssertFalse(events.all.contains("timeout"))
    }

    func testTheGroupStartsInOrderAndStopsInReverseWithOneDeadline() throws {
        let order = Recorder<String>()
        let log = LogCapture()
        let group = ServiceGroup(["a", "b", "c"].map { name in
            AnyService(name, start: { order.append("start \(name)") }, stop: { deadline in
                if name == "b" { sleepThread(until: deadline.adding(milliseconds: 1)) }   // misses the deadline
                order.append("stop \(name)")
            }, forceInactive: { order.append("force \(name)") })
        }, logger: log.logger)
        try group.start()
        XCTAssertFalse(group.stop(deadline: .now().adding(milliseconds: 20)))
        XCTAssertEqual(order.all, ["start a", "start b", "start c", "stop c", "stop b", "force b", "stop a", "force a"])
        XCTAssertTrue(log.all.contains { $0.contains("shutdown: b, a did not stop by the deadline") }, "\(log.all)")
    }

    func testAGroupWhoseStartFailsStopsWhatStarted() {
        struct Refused: Error {}
        let order = Recorder<String>()
        let group = ServiceGroup([
            AnyService("a", start: { order.append("start a") }, stop: { _ in order.append("stop a") }),
            AnyService("b", start: { throw Refused() }, stop: { _ in order.append("stop b") }),
        ], logger: LogCapture().logger)
        XCTAssertThrowsError(try group.start())
        XCTAssertEqual(order.all, ["start a", "stop a"])
    }
}

import Core
import Dispatch
@testable import MQTT
import Foundation
import Platform
import Synchronization
import XCTest

/// The bounded queue in front of the spool: a dropped event's memory goes with it.
final class MQTTQueueTests: XCTestCase {
    func payload(_ n: Int, size: Int) -> [UInt8] { Array("\(n):".utf8) + [UInt8](repeating: 0x78, count: size) }

    /// 20 MiB pushed into an 8 MiB queue that nobody takes from (the spool thread stuck in fdatasync):
    /// what the slots really hold, counted slot by slot, stays within the bound, and the newest are kept
    /// in order.
    func testDroppedPayloadsAreReleasedNotKept() {
        var queue = PayloadQueue(limitBytes: 8 << 20)
        var dropped = 0
        for n in 0..<200 { dropped += queue.push(payload(n, size: 100 << 10)) }
        XCTAssertGreaterThan(dropped, 100)
        XCTAssertEqual(queue.count + dropped, 200)
        XCTAssertLessThanOrEqual(queue.chargedBytes, 8 << 20)
        XCTAssertLessThanOrEqual(queue.storedPayloadBytes, 8 << 20, "the dropped payloads are not kept in memory")
        let taken = queue.pop(maxCount: 1000)
        XCTAssertEqual(taken.map { String(decoding: $0.prefix(4), as: UTF8.self) }, ((200 - taken.count)..<200).map { String("\($0):".prefix(4)) })
        XCTAssertEqual(queue.storedPayloadBytes, 0, "taken ones are released too")
        XCTAssertEqual(queue.chargedBytes, 0)
    }

    /// Even empty payloads are bounded (each entry costs its overhead), and the slot array shrinks back
    /// after a burst.
    func testEntriesAreBoundedAndTheSlotsShrinkAfterABurst() {
        var queue = PayloadQueue(limitBytes: 64 << 10)
        for _ in 0..<100_000 { _ = queue.push([]) }
        XCTAssertLessThanOrEqual(queue.count, (64 << 10) / PayloadQueue.entryOverhead)
        XCTAssertLessThanOrEqual(queue.capacity, 2 * (64 << 10) / PayloadQueue.entryOverhead + 16)
        _ = queue.pop(maxCount: queue.count)
        XCTAssertTrue(queue.isEmpty)
        XCTAssertLessThanOrEqual(queue.capacity, 64)
    }

    /// A batch put back in front (the spool could not write it) comes out first, and the bound still holds.
    func testABatchPutBackComesOutFirstWithinTheBound() {
        var queue = PayloadQueue(limitBytes: 10 * (1024 + PayloadQueue.entryOverhead))
        for n in 0..<5 { _ = queue.push(payload(n, size: 1020)) }
        let batch = queue.pop(maxCount: 3)
        for n in 5..<8 { _ = queue.push(payload(n, size: 1020)) }
        XCTAssertEqual(queue.pushFront(batch), 0)
        XCTAssertEqual(queue.pop(maxCount: 100).map { $0.first }, [0, 1, 2, 3, 4, 5, 6, 7].map { Array("\($0)".utf8).first })
        for n in 0..<10 { _ = queue.push(payload(n, size: 1020)) }
        let back = queue.pop(maxCount: 4)
        for n in 10..<14 { _ = queue.push(payload(n, size: 1020)) }
        XCTAssertEqual(queue.pushFront(back), 4, "over the bound: the oldest (the batch itself) go")
        XCTAssertLessThanOrEqual(queue.chargedBytes, queue.limitBytes)
        XCTAssertLessThanOrEqual(queue.storedPayloadBytes, queue.limitBytes)
    }

    /// The output with its spool thread held before it writes (as a stuck fdatasync would hold it): 20 MiB
    /// of events are reported, the queue keeps at most its bound in memory and counts the drops; let go,
    /// the spool takes what was kept.
    func testAStuckSpoolThreadKeepsTheQueueBounded() throws {
        let library = try MosquittoLibrary()
        let port = try FreePort.make()   // no broker: the events stay in the spool
        let log = LogCapture()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: port, spool: try TestFiles.temporaryDirectory() + "/spool"),
                                                library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let gate = DispatchSemaphore(value: 0)
        output.context.writerGate.withLock { $0 = gate }
        let text = String(repeating: "q", count: 100 << 10)
        output.report(MQTTTestEvents.event(seq: 1, text: text))
        XCTAssertTrue(waitUntil(10) { output.context.writerHeld.load(ordering: .acquiring) }, "the spool thread is held")
        for seq in 2...201 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: text)) }
        let stats = output.context.queueStats
        XCTAssertLessThanOrEqual(stats.stored, MQTTOutput.queueLimitBytes, "the queue holds at most its bound: \(stats)")
        XCTAssertLessThanOrEqual(stats.charged, MQTTOutput.queueLimitBytes)
        XCTAssertGreaterThan(output.link.queueDropped, 100)
        XCTAssertGreaterThanOrEqual(UInt64(stats.count) + output.link.queueDropped, 200, "none taken while held")
        XCTAssertTrue(log.contains("the queue in front of the spool is full"), log.all.joined(separator: "\n"))
        output.context.writerGate.withLock { $0 = nil }
        gate.signal()
        XCTAssertTrue(waitUntil(20) { output.link.spool.records + output.link.queueDropped == 201 }, "\(output.link.spool)")
        XCTAssertEqual(output.context.queueStats.stored, 0)
    }
}

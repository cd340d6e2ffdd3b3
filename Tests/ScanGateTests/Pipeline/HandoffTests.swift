import XCTest
import Core
import Dispatch
import Pipeline
import Platform

final class HandoffTests: XCTestCase {
    func frame(_ n: UInt64) -> Frame {
        Frame(width: 4, height: 4, sequence: n, captureTime: MonotonicInstant(nanoseconds: n), luma: [UInt8](repeating: 0, count: 16))
    }

    /// A slow decoder: frames offered while it is busy replace each other; each replacement is counted,
    /// and the frame decoded next is always the newest one.
    func testLiveHandoffReplacesStaleFramesAndCountsThem() {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let processed = PosixMutex<[UInt64]>([])
        let handoff = FrameHandoff(live: true) { f in
            if f.sequence == 0 { started.signal(); gate.wait() }
            processed.withLock { $0.append(f.sequence) }
        }
        handoff.offer(frame(0))
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        for n in UInt64(1)...5 { handoff.offer(frame(n)) }   // decoder busy with frame 0
        gate.signal()
        handoff.drain()
        XCTAssertEqual(processed.withLock { $0 }, [0, 5], "only the newest waiting frame is decoded")
        XCTAssertEqual(handoff.droppedCount, 4)
    }

    /// --fast: the capture side waits, nothing is dropped, order is kept.
    func testFastHandoffDropsNothing() {
        let processed = PosixMutex<[UInt64]>([])
        let handoff = FrameHandoff(live: false) { f in
            if f.sequence % 7 == 0 { sleepThread(milliseconds: 1) }   // an uneven decoder, not a sync point
            processed.withLock { $0.append(f.sequence) }
        }
        for n in 0..<200 { handoff.offer(frame(UInt64(n))) }
        handoff.drain()
        XCTAssertEqual(processed.withLock { $0 }, (0..<200).map(UInt64.init))
        XCTAssertEqual(handoff.droppedCount, 0)
    }
}

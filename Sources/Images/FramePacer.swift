#if canImport(Glibc)
import Glibc
#endif
import Platform

/// Real-time pacing for the simulator and replay: frame k is due at start + k/fps on CLOCK_MONOTONIC,
/// and the caller sleeps until that absolute time (so rendering time is not added to every frame).
/// A source that falls more than one second behind starts a new timeline instead of bursting.
public struct FramePacer: Sendable {
    public let fps: Double
    private var start: MonotonicInstant?
    private var index: UInt64 = 0

    public init(fps: Double) { self.fps = fps }

    /// Sleeps until the next frame is due. Call once per frame, before handing it out.
    public mutating func waitForNextFrame() {
        let now = MonotonicInstant.now()
        guard let origin = start else {
            start = now
            index = 1
            return
        }
        let due = origin.adding(milliseconds: Double(index) / fps * 1000)
        if now.milliseconds(since: due) > 1000 {
            start = now
            index = 1
            return
        }
        index += 1
        sleepThread(until: due)
    }

    /// Forgets the timeline (after a pause or a reopen).
    public mutating func reset() { start = nil; index = 0 }

}

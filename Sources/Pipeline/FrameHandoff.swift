import Core
import Dispatch

/// Hands frames from the capture thread to the one serial decode queue.
/// - live sources: the newest frame wins. A frame still waiting when a newer one arrives is replaced,
///   and the replacement is counted as a drop; no frame is decoded while a newer one is waiting.
/// - `--fast` sources: the capture thread waits while one frame is being decoded and one is waiting,
///   so nothing is dropped and results are deterministic.
public final class FrameHandoff: Sendable {
    public let queue: DispatchQueue
    private let live: Bool
    private let process: @Sendable (Frame) -> Void

    private struct State {
        var decoding = false
        var waiting: Frame?
        var dropped: UInt64 = 0
        var handedOff: UInt64 = 0
    }
    private let state = PosixMutex(State())
    /// Fast mode: free places (one decoding + one waiting).
    private let places = DispatchSemaphore(value: 2)

    /// `process` runs on `queue` for each frame that is decoded.
    public init(live: Bool, queue: DispatchQueue = DispatchQueue(label: "scangate.decode", qos: .userInitiated),
                process: @escaping @Sendable (Frame) -> Void) {
        self.live = live
        self.queue = queue
        self.process = process
    }

    /// Frames replaced before they were decoded.
    public var droppedCount: UInt64 { state.withLock { $0.dropped } }
    public var handedOffCount: UInt64 { state.withLock { $0.handedOff } }

    /// Called by the capture thread. Never blocks for a live source.
    public func offer(_ frame: Frame) {
        if !live {
            places.wait()
            state.withLock { $0.handedOff += 1 }
            queue.async { [self] in
                process(frame)
                places.signal()
            }
            return
        }
        let startNow: Bool = state.withLock { s in
            s.handedOff += 1
            if s.decoding {
                if s.waiting != nil { s.dropped += 1 }
                s.waiting = frame
                return false
            }
            s.decoding = true
            return true
        }
        if startNow { queue.async { [self] in runLive(frame) } }
    }

    private func runLive(_ first: Frame) {
        var next: Frame? = first
        while let frame = next {
            process(frame)
            next = state.withLock { s in
                if let w = s.waiting {
                    s.waiting = nil
                    return w
                }
                s.decoding = false
                return nil
            }
        }
    }

    /// Waits until every frame handed off has been processed.
    public func drain() {
        while true {
            queue.sync {}
            let idle = state.withLock { !$0.decoding && $0.waiting == nil }
            if idle { return }
        }
    }
}

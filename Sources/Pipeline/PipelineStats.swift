import Synchronization

/// Counters of one pipeline run, readable from any thread (status, bench, watchdog).
public final class PipelineStats: Sendable {
    private struct Counts {
        var captured: UInt64 = 0
        var decoded: UInt64 = 0
        var reported: UInt64 = 0
        var rejected: UInt64 = 0
        var cameraLosses: UInt64 = 0
        var decodeNanoseconds: UInt64 = 0
    }
    private let counts = Mutex(Counts())

    public init() {}

    public var captured: UInt64 { counts.withLock { $0.captured } }
    public var decoded: UInt64 { counts.withLock { $0.decoded } }
    public var reported: UInt64 { counts.withLock { $0.reported } }
    public var rejected: UInt64 { counts.withLock { $0.rejected } }
    public var cameraLosses: UInt64 { counts.withLock { $0.cameraLosses } }
    public var decodeNanoseconds: UInt64 { counts.withLock { $0.decodeNanoseconds } }

    func frameCaptured() { counts.withLock { $0.captured += 1 } }
    func frameDecoded(nanoseconds: UInt64) {
        counts.withLock { $0.decoded += 1; $0.decodeNanoseconds += nanoseconds }
    }
    func codeReported(accepted: Bool) {
        counts.withLock { if accepted { $0.reported += 1 } else { $0.rejected += 1 } }
    }
    func cameraLost() { counts.withLock { $0.cameraLosses += 1 } }
}

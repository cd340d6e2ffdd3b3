import Core

/// Counters of one pipeline run, readable from any thread (status, bench, watchdog).
public final class PipelineStats: Sendable {
    private struct Counts {
        var captured: UInt64 = 0
        var decoded: UInt64 = 0
        var reported: UInt64 = 0
        var rejected: UInt64 = 0
        var cameraLosses: UInt64 = 0
        var decodeNanoseconds: UInt64 = 0
        var stages = StageTimes()
    }
    private let counts = PosixMutex(Counts())

    public init() {}

    public var captured: UInt64 { counts.withLock { $0.captured } }
    public var decoded: UInt64 { counts.withLock { $0.decoded } }
    public var reported: UInt64 { counts.withLock { $0.reported } }
    public var rejected: UInt64 { counts.withLock { $0.rejected } }
    public var cameraLosses: UInt64 { counts.withLock { $0.cameraLosses } }
    public var decodeNanoseconds: UInt64 { counts.withLock { $0.decodeNanoseconds } }

    /// Time spent in each stage so far.
    public var stageTimes: StageTimes { counts.withLock { $0.stages } }

    func frameCaptured(captureNanoseconds: UInt64) {
        counts.withLock { $0.captured += 1; $0.stages.capture.add(captureNanoseconds) }
    }
    func stageTimed(_ stage: WritableKeyPath<StageTimes, StageTime>, _ nanoseconds: UInt64) {
        counts.withLock { $0.stages[keyPath: stage].add(nanoseconds) }
    }
    func frameDecoded(nanoseconds: UInt64) {
        counts.withLock { $0.decoded += 1; $0.decodeNanoseconds += nanoseconds }
    }
    func codeReported(accepted: Bool) {
        counts.withLock { if accepted { $0.reported += 1 } else { $0.rejected += 1 } }
    }
    func cameraLost() { counts.withLock { $0.cameraLosses += 1 } }
}

/// Total time and count of one pipeline stage.
public struct StageTime: Sendable, Equatable {
    public var count: UInt64 = 0
    public var nanoseconds: UInt64 = 0
    public init() {}
    mutating func add(_ ns: UInt64) { count += 1; nanoseconds &+= ns }
    public var meanMilliseconds: Double { count == 0 ? 0 : Double(nanoseconds) / Double(count) / 1e6 }
}

/// Per-stage timing: capture (source), handoff (dequeue → decode start), decode, debounce (with the
/// payload policies), outputs (all handle() calls for an event).
public struct StageTimes: Sendable, Equatable {
    public var capture = StageTime()
    public var handoff = StageTime()
    public var decode = StageTime()
    public var debounce = StageTime()
    public var outputs = StageTime()
    public init() {}
}

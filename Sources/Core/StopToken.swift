import Synchronization

/// Asks one run of the capture loop to end. Each pipeline run has its own token, so a source that a
/// reload hands to the next run starts that run with a fresh token, never an old stop request.
public final class StopToken: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Safe from any thread.
    public func stop() { flag.store(true, ordering: .releasing) }

    public var isStopped: Bool { flag.load(ordering: .acquiring) }
}

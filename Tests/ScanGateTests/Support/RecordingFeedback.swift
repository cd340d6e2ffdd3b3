import Core
import Platform

/// A FeedbackSink that records what it was asked to play, in order; `wait(for:)` returns as soon as the
/// request arrives (or at its deadline).
final class RecordingFeedback: FeedbackSink, Sendable {
    private let played = PosixMutex<[(FeedbackRequest, String)]>([])
    private let arrived = TestEvent()

    func play(_ request: FeedbackRequest, origin: String) {
        played.withLock { $0.append((request, origin)) }
        arrived.signal()
    }

    var requests: [FeedbackRequest] { played.withLock { $0.map(\.0) } }
    var origins: [String] { played.withLock { $0.map(\.1) } }

    /// Waits until `count` requests arrived; false when `seconds` pass first.
    func wait(for count: Int, seconds: Double = 10) -> Bool {
        waitUntil(seconds, wakingOn: arrived) { requests.count >= count }
    }
}

import Dispatch
import Synchronization

/// The hand-over between the decode queue (which posts beeps and must never wait) and the playback
/// thread: at most one pending beep (a newer one replaces it: no backlog) and the close request.
final class BeepMailbox: Sendable {
    enum Message: Equatable {
        case play(BeepPattern)
        case close
        case nothing
    }

    private struct State {
        var pending: BeepPattern?
        var closing = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Replaces any pending beep with `pattern`. Never blocks.
    func post(_ pattern: BeepPattern) {
        let accepted = state.withLock { s in
            guard !s.closing else { return false }
            s.pending = pattern
            return true
        }
        if accepted { wake.signal() }
    }

    func requestClose() {
        state.withLock { $0.closing = true }
        wake.signal()
    }

    /// True when a newer beep or a close request is waiting (the player then stops the current beep).
    var hasNews: Bool { state.withLock { $0.closing || $0.pending != nil } }

    var isClosing: Bool { state.withLock { $0.closing } }

    /// Takes the next message: close wins over a pending beep.
    func take() -> Message {
        state.withLock { s in
            if s.closing { return .close }
            if let p = s.pending {
                s.pending = nil
                return .play(p)
            }
            return .nothing
        }
    }

    /// Blocks the playback thread until something is posted.
    func waitForNews() { wake.wait() }
}

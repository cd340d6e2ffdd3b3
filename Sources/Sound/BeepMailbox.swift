import Core
import Dispatch
import Platform

/// The hand-over between the callers (the decode queue, a controller's thread; they must never wait)
/// and the playback thread: at most one pending program (a newer one replaces it: no backlog), a
/// silence request, and the close request.
final class BeepMailbox: Sendable {
    enum Message: Equatable {
        case play(BeepProgram)
        case silence
        case close
        case nothing
    }

    private struct State {
        var pending: Message = .nothing
        var closing = false
        var playing = false
        var idleWaiters: [DispatchSemaphore] = []
    }

    private let state = PosixMutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Replaces any pending program with `program`. Never blocks.
    func post(_ program: BeepProgram) { post(message: .play(program)) }

    /// Stops what plays now (and drops what is pending).
    func postSilence() { post(message: .silence) }

    private func post(message: Message) {
        let accepted = state.withLock { s in
            guard !s.closing else { return false }
            s.pending = message
            return true
        }
        if accepted { wake.signal() }
    }

    func requestClose() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            s.closing = true
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
        wake.signal()
    }

    /// True when a newer request or a close is waiting (the player then stops the current beep).
    var hasNews: Bool { state.withLock { $0.closing || $0.pending != .nothing } }

    /// Takes the next message: close wins over anything pending.
    func take() -> Message {
        state.withLock { s in
            if s.closing { return .close }
            let m = s.pending
            s.pending = .nothing
            if case .play = m { s.playing = true }
            return m
        }
    }

    /// The player finished what it took: wakes those waiting for the beep to end.
    func finishedPlaying() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            s.playing = false
            guard s.pending == .nothing else { return [] }
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
    }

    /// Blocks until nothing plays or waits to play, or `deadline`; true when idle.
    func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let idle = state.withLock { s -> Bool in
            if s.closing || (!s.playing && s.pending == .nothing) { return true }
            s.idleWaiters.append(waiter)
            return false
        }
        if idle { return true }
        let ms = max(0, deadline.milliseconds(since: .now()))
        return waiter.wait(timeout: .now() + .milliseconds(Int(ms.rounded(.up)))) == .success
    }

    /// Blocks the playback thread until something is posted.
    func waitForNews() { wake.wait() }
}

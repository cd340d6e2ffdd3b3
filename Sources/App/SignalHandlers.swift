import Core
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Routes SIGINT/SIGTERM/SIGHUP/SIGUSR1 to closures, never in signal context.
/// `blockSignals()` must run before the process starts any thread, so that every thread inherits the
/// blocked mask and the kernel keeps these signals pending for the one thread that waits for them with
/// sigtimedwait(2); a signal can then never land on a thread that ignores it.
final class SignalHandlers: @unchecked Sendable {
    static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1]

    private final class State: Sendable {
        let handlers = PosixMutex<[Int32: @Sendable (Int32) -> Void]>([:])
        let stopping = Atomic<Bool>(false)
    }
    private let state = State()
    private var thread: PosixThread?

    /// Blocks the handled signals in the calling thread (and so in every thread it starts later).
    static func blockSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for s in handled { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    func on(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) {
        state.handlers.withLock { h in for s in signals { h[s] = handler } }
    }

    /// Starts the thread that waits for the signals.
    func start() throws {
        let state = self.state
        thread = try PosixThread(name: "scangate-signals") {
            var set = sigset_t()
            sigemptyset(&set)
            for s in SignalHandlers.handled { sigaddset(&set, s) }
            var timeout = timespec(tv_sec: 0, tv_nsec: 100_000_000)
            while !state.stopping.load(ordering: .relaxed) {
                let sig = sigtimedwait(&set, nil, &timeout)
                guard sig > 0 else { continue }   // timeout (EAGAIN) or EINTR
                let handler = state.handlers.withLock { $0[sig] }
                handler?(sig)
            }
        }
    }

    /// Stops waiting; the signals stay blocked (one arriving now stays pending until exit).
    func cancel() {
        state.stopping.store(true, ordering: .relaxed)
        thread?.join()
        thread = nil
    }
}

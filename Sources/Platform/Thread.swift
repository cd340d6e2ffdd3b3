#if canImport(Glibc)
import Glibc
#endif
import CShim

/// A joinable POSIX thread running one closure (the capture thread, pattern timers).
public final class PosixThread: @unchecked Sendable {
    private var handle = pthread_t()
    private var joined = false
    private final class Box {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    /// Starts `body` on a new thread named `name` (at most 15 characters are kept, as Linux allows).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        let rc = pthread_create(&handle, nil, { raw in
            guard let raw else { return nil }
            let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            shim_set_current_thread_name(box.name)
            box.body()
            return nil
        }, box)
        if rc != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create", name, Errno(rawValue: rc))
        }
    }

    /// Waits for the thread to finish (once).
    public func join() {
        guard !joined else { return }
        joined = true
        pthread_join(handle, nil)
    }

    /// Gives up waiting for it: a thread stuck in a blocking call past a close deadline ends on its own
    /// (or with the process), and its resources are freed when it does. Called by its owner, once.
    public func detach() {
        guard !joined else { return }
        joined = true
        pthread_detach(handle)
    }

    deinit {
        // Neither joined nor detached (an owner that gave up on it): never leak the finished thread.
        if !joined { pthread_detach(handle) }
    }
}

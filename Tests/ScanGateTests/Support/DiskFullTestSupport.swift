import Platform
import Synchronization

/// A disk that is full while `full` is set: each write (or each fdatasync) of a store's record fails with
/// ENOSPC, as on a file system with no room, and works again once it is cleared.
final class TestFullDisk: Sendable {
    let full = Atomic<Bool>(true)
    let failures = Atomic<Int>(0)
    let error: Errno
    let at: Step

    enum Step { case write, sync }

    init(at: Step = .write, error: Errno = .noSpace) {
        self.at = at
        self.error = error
    }

    func clear() { full.store(false, ordering: .releasing) }

    var faults: WriteFaults {
        let hook: @Sendable (String) -> Errno? = { [self] _ in
            guard full.load(ordering: .acquiring) else { return nil }
            failures.add(1, ordering: .relaxed)
            return error
        }
        return at == .write ? WriteFaults(write: hook) : WriteFaults(sync: hook)
    }
}

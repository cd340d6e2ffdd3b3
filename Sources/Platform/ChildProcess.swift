#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn(3): the one way the bench and the soak start the daemon and
/// Debian's mosquitto.
///
/// The child starts with an empty signal mask and default dispositions. A scangate process blocks
/// SIGTERM, SIGINT and SIGHUP in every thread (its signal thread takes them with sigtimedwait), and a
/// spawned child inherits the mask: a broker started from there never saw its SIGTERM, and the bench
/// waited for it for ever.
public struct ChildProcess: Sendable {
    /// Where the child's stdout or stderr goes.
    public enum Stream: Sendable {
        /// The parent's own.
        case inherit
        case devNull
        /// This descriptor (the write end of a pipe), duplicated onto the stream.
        case descriptor(Int32)
    }

    public let pid: pid_t
    public let executable: String

    /// Starts `executable arguments`. `closeInChild`: descriptors the child must not keep (the read end
    /// of a pipe whose write end it has).
    public static func spawn(_ executable: String, _ arguments: [String], stdout: Stream = .inherit, stderr: Stream = .inherit,
                             closeInChild: [Int32] = []) throws(SystemError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init", executable)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch stream {
            case .inherit: break
            case .devNull:
                try check(posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0),
                          "posix_spawn_file_actions_addopen /dev/null", executable)
            case .descriptor(let source):
                try check(posix_spawn_file_actions_adddup2(&actions, source, fd), "posix_spawn_file_actions_adddup2", executable)
            }
        }
        for fd in closeInChild {
            try check(posix_spawn_file_actions_addclose(&actions, fd), "posix_spawn_file_actions_addclose", executable)
        }
        var attributes = posix_spawnattr_t()
        try check(posix_spawnattr_init(&attributes), "posix_spawnattr_init", executable)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        try check(posix_spawnattr_setsigmask(&attributes, &empty), "posix_spawnattr_setsigmask", executable)
        try check(posix_spawnattr_setsigdefault(&attributes, &defaults), "posix_spawnattr_setsigdefault", executable)
        try check(posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)),
                  "posix_spawnattr_setflags", executable)
        let args = [executable] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        try check(posix_spawn(&pid, executable, &actions, &attributes, &argv, environ), "posix_spawn", executable)
        return ChildProcess(pid: pid, executable: executable)
    }

    /// Sends `signal` (default SIGTERM); false when the child is already gone (ESRCH).
    @discardableResult
    public func signal(_ signal: Int32 = SIGTERM) -> Bool { kill(pid, signal) == 0 }

    /// Waits for the child to end (EINTR resumed) and returns its exit status as a shell shows it (128+N
    /// for a signal N); nil when it was already reaped.
    public func wait() -> Int32? {
        var status: Int32 = 0
        guard case .success(let r) = retryOnInterrupt({ waitpid(pid, &status, 0) }), r == pid else { return nil }
        return ChildProcess.exitStatus(status)
    }

    /// What `poll` found.
    public enum State: Equatable, Sendable {
        case running
        /// Ended, with its exit status as a shell shows it.
        case exited(Int32)
        /// Already reaped, or not our child.
        case gone
    }

    /// Whether the child has ended (reaping it if so); never waits.
    public func poll() -> State {
        var status: Int32 = 0
        switch retryOnInterrupt({ waitpid(pid, &status, WNOHANG) }) {
        case .success(let r) where r == pid: return .exited(ChildProcess.exitStatus(status))
        case .success: return .running
        case .failure: return .gone
        }
    }

    static func exitStatus(_ status: Int32) -> Int32 {
        (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    private static func check(_ rc: Int32, _ operation: String, _ subject: String) throws(SystemError) {
        guard rc == 0 else { throw SystemError(operation, subject, Errno(rawValue: rc)) }
    }
}

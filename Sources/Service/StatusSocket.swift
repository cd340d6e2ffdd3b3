import Core
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's status socket: a Unix stream socket that answers `scangate status`.
///
/// Path: `$RUNTIME_DIRECTORY/status.sock` (systemd sets RUNTIME_DIRECTORY from `RuntimeDirectory=`; with
/// several directories, the first), or `/run/scangate/status.sock`. Mode 0660, group `scangate` when that
/// group exists, so members of the group may ask without root. It appears with those permissions at
/// once (bound under a temporary name, then renamed). A stale socket from a daemon that died is
/// replaced; one that still answers means another daemon runs, and is an error.
///
/// Protocol: the client sends one line, `status`, and gets one JSON document (`StatusReport.json`) and a
/// newline, then the connection closes. Bounds: connections are served one at a time on the socket's
/// own thread (backlog 8; more wait in the kernel or are refused), a request of at most 256 bytes,
/// 2 s to send it and 2 s to read the answer; a client that breaks them is dropped.
public final class StatusSocket: Sendable {
    public static let fileName = "status.sock"
    public static let maxRequestBytes = 256
    public static let timeoutMilliseconds: Int32 = 2000
    public static let backlog: Int32 = 8

    public let path: String
    private let fd: Int32
    private let inode: UInt64
    private let wake: (read: Int32, write: Int32)
    private let thread: Mutex<PosixThread?>
    private let closed = Atomic<Bool>(false)
    private let served = Counter()

    final class Counter: Sendable {
        let value = Atomic<UInt64>(0)
    }

    /// `$RUNTIME_DIRECTORY/status.sock`, or `/run/scangate/status.sock`.
    public static func defaultPath(environment: [String: String]? = nil) -> String {
        let value = environment.map { $0["RUNTIME_DIRECTORY"] } ?? getenv("RUNTIME_DIRECTORY").map { String(cString: $0) }
        if let dirs = value ?? nil, let first = dirs.split(separator: ":").first, !first.isEmpty {
            return String(first) + "/" + fileName
        }
        return "/run/scangate/" + fileName
    }

    /// Connections answered so far.
    public var connectionsServed: UInt64 { served.value.load(ordering: .relaxed) }

    /// Binds the socket and starts its thread. `provider` runs on that thread for each connection.
    public init(path: String = StatusSocket.defaultPath(), group: String? = "scangate",
                provider: @escaping @Sendable () -> StatusReport, logger: Logger) throws(SystemError) {
        self.path = path
        let bytes = Array(path.utf8)
        guard bytes.count < 100 else { throw SystemError("bind", path, Errno(rawValue: ENAMETOOLONG)) }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !directory.isEmpty, access(directory, F_OK) != 0 {
            guard mkdir(directory, 0o755) == 0 || errno == EEXIST else { throw SystemError("mkdir", directory, .current) }
        }
        try StatusSocket.clearStale(path)

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path, .current) }
        // Bound under a temporary name, given its mode and group, then renamed: never reachable with the
        // umask's permissions.
        let temporary = path + ".\(getpid()).tmp"
        unlink(temporary)
        do throws(SystemError) {
            try StatusSocket.bind(fd, temporary)
            guard chmod(temporary, 0o660) == 0 else { throw SystemError("chmod 0660", temporary, .current) }
            if let group, let gid = StatusSocket.groupID(group) {
                guard chown(temporary, uid_t.max, gid) == 0 else { throw SystemError("chown :\(group)", temporary, .current) }
            }
            guard rename(temporary, path) == 0 else { throw SystemError("rename to \(path)", temporary, .current) }
            guard listen(fd, StatusSocket.backlog) == 0 else { throw SystemError("listen", path, .current) }
        } catch {
            unlink(temporary)
            Glibc.close(fd)
            throw error
        }
        var info = stat()
        _ = stat(path, &info)
        inode = UInt64(info.st_ino)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            let e = Errno.current
            unlink(path)
            Glibc.close(fd)
            throw SystemError("pipe", path, e)
        }
        for p in fds { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        self.wake = (fds[0], fds[1])
        self.thread = Mutex(nil)
        let listenFD = fd, wakeFD = fds[0], served = self.served
        let t = try PosixThread(name: "status-socket") {
            StatusSocket.serve(listenFD: listenFD, wakeFD: wakeFD, provider: provider, served: served, logger: logger, path: path)
        }
        thread.withLock { $0 = t }
    }

    deinit { close() }

    /// Stops the thread, closes the socket and removes it (if it is still ours). Once.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        thread.withLock { $0 }?.join()
        var info = stat()
        if stat(path, &info) == 0, UInt64(info.st_ino) == inode { unlink(path) }
        Glibc.close(fd)
        Glibc.close(wake.read)
        Glibc.close(wake.write)
    }

    // MARK: - Set-up

    static func bind(_ fd: Int32, _ path: String) throws(SystemError) {
        let rc = StatusSocketAddress.with(path) { Glibc.bind(fd, $0, $1) }
        guard rc == 0 else { throw SystemError("bind", path, .current) }
    }

    /// A socket left by a daemon that died is removed; one that answers means a daemon runs.
    static func clearStale(_ path: String) throws(SystemError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw SystemError("bind (the path exists and is not a socket)", path, Errno(rawValue: EEXIST))
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw SystemError("socket", path, .current) }
        defer { Glibc.close(probe) }
        if StatusSocketAddress.with(path, { connect(probe, $0, $1) }) == 0 {
            throw SystemError("bind (another scangate answers on it; stop it first)", path, Errno(rawValue: EADDRINUSE))
        }
        unlink(path)
    }

    static func groupID(_ name: String) -> gid_t? {
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
    }

    // MARK: - The thread

    static func serve(listenFD: Int32, wakeFD: Int32, provider: @Sendable () -> StatusReport, served: Counter,
                      logger: Logger, path: String) {
        while true {
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            guard case .success = retryOnInterrupt({ poll(&fds, 2, -1) }) else { return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let client: Int32
            switch retryOnInterrupt({ accept(listenFD, nil, nil) }) {
            case .success(let fd): client = fd
            case .failure(let e):
                if e.rawValue != EAGAIN && e.rawValue != ECONNABORTED {
                    logger.warning("status socket \(path): accept: \(e)", rateLimitKey: "status-accept")
                }
                continue
            }
            // Close-on-exec and non-blocking (the daemon never forks; a blocking read would hang this thread).
            let flags = fcntl(client, F_GETFL)
            guard fcntl(client, F_SETFD, FD_CLOEXEC) == 0, flags >= 0, fcntl(client, F_SETFL, flags | O_NONBLOCK) == 0 else {
                logger.warning("status socket \(path): fcntl on a client: \(Errno.current)", rateLimitKey: "status-accept")
                _ = FileDescriptor(rawValue: client).close()
                continue
            }
            answer(client, provider: provider, logger: logger, path: path)
            _ = FileDescriptor(rawValue: client).close()
            served.value.add(1, ordering: .relaxed)
        }
    }

    /// Reads one request line (bounded in size and time) and writes the answer (bounded in time).
    static func answer(_ client: Int32, provider: () -> StatusReport, logger: Logger, path: String) {
        let deadline = MonotonicInstant.now().adding(milliseconds: Double(timeoutMilliseconds))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: maxRequestBytes + 1)
        reading: while request.count <= maxRequestBytes {
            let left = Int32(max(0, deadline.milliseconds(since: .now())))
            guard left > 0, case .success(let events) = FileDescriptor(rawValue: client).poll(Int16(POLLIN), timeoutMilliseconds: left),
                  events != 0 else {
                return
            }
            let n: Int
            switch buffer.withUnsafeMutableBytes({ FileDescriptor(rawValue: client).read(into: $0) }) {
            case .success(let count): n = count
            case .failure(let e) where e.rawValue == EAGAIN: continue
            case .failure: return
            }
            if n == 0 { break }
            for b in buffer[0..<n] {
                if b == 0x0A { break reading }
                request.append(b)
            }
        }
        let body: String
        if request.count > maxRequestBytes {
            body = JSONText.object([("error", JSONText.string("a request is at most \(maxRequestBytes) bytes"))])
        } else {
            let text = String(decoding: request, as: UTF8.self).trimmingSpaces
            body = text == "status" ? provider().json
                : JSONText.object([("error", JSONText.string("unknown request \(JSONText.string(text)); send 'status'"))])
        }
        let bytes = Array((body + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let left = Int32(max(0, deadline.milliseconds(since: .now()) + Double(timeoutMilliseconds)))
            guard left > 0, case .success(let events) = FileDescriptor(rawValue: client).poll(Int16(POLLOUT), timeoutMilliseconds: left),
                  events & Int16(POLLOUT) != 0 else {
                logger.warning("status socket \(path): a client did not read its answer in time", rateLimitKey: "status-slow")
                return
            }
            // send with MSG_NOSIGNAL: a client gone mid-answer is EPIPE here, never SIGPIPE for the daemon.
            let sent = bytes.withUnsafeBytes { raw in
                retryOnInterrupt { send(client, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL)) }
            }
            switch sent {
            case .success(let n): offset += n
            case .failure(let e) where e.rawValue == EAGAIN: continue
            case .failure: return
            }
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and CR.
    var trimmingSpaces: String {
        let s = unicodeScalars.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
        var end = s.endIndex
        while end > s.startIndex, let last = s[..<end].last, last == " " || last == "\t" || last == "\r" {
            end = s[..<end].index(before: end)
        }
        return String(String.UnicodeScalarView(s[..<end]))
    }
}

/// A sockaddr_un for a path (shorter than 108 bytes), for bind and connect.
public enum StatusSocketAddress {
    public static func with<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

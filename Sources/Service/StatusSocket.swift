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
/// newline, then the connection closes. Or it sends `snapshot` and gets one JSON line (`{"view": …}`)
/// and the newest frame's luma, width × height bytes (at most 4096 × 4096; `StatusSnapshot`), or one
/// `{"error": …}` line when there is no frame yet. `controls` answers one line, `{"controls":[{"key":
/// "brightness","name":"Brightness","type":"int","min":0,"max":255,"step":1,"default":128,"value":128},…]}`;
/// `control NAME=VALUE` sets one on the open camera and answers `{"control":{"key":…,"value":<read back>}}`;
/// either answers `{"error": …}` (a simulated or replayed source has no controls; an unknown name or a
/// value out of range is named with what is allowed; `CameraControlRequests`); their ioctls run on the
/// socket's thread, a few milliseconds. Bounds: up to 16 clients at once on the socket's own thread (one
/// poll; more wait in the kernel's backlog of 8, or are refused), a request of at most 256 bytes, 1 s to
/// send it and 2 s to read the answer; a client that breaks them is dropped, and none delays `close`.
public final class StatusSocket: Sendable {
    public static let fileName = "status.sock"
    public static let maxRequestBytes = 256
    public static let timeoutMilliseconds: Int32 = 2000
    public static let backlog: Int32 = 8

    public let path: String
    private let fd: Int32
    private let inode: UInt64
    private let wake: (read: Int32, write: Int32)
    private let thread: PosixMutex<PosixThread?>
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
                provider: @escaping @Sendable () -> StatusReport,
                snapshot: (@Sendable () -> StatusSnapshot?)? = nil, controls: CameraControlsSlot? = nil,
                logger: Logger) throws(SystemError) {
        self.path = path
        // Bound first under a temporary name: that one must fit sockaddr_un's 108 bytes too (with its NUL).
        let temporary = path + ".\(getpid()).tmp"
        guard Array(temporary.utf8).count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw SystemError("bind (a socket path is at most \(MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 13) bytes here)",
                              path, Errno(rawValue: ENAMETOOLONG))
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !directory.isEmpty, access(directory, F_OK) != 0 {
            guard mkdir(directory, 0o755) == 0 || errno == EEXIST else { throw SystemError("mkdir", directory, .current) }
        }
        try StatusSocket.clearStale(path)

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", path, .current) }
        // Bound under a temporary name, given its mode and group, then renamed: never reachable with the
        // umask's permissions.
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
        var fds: [Int32] = [-1, -1]
        // The inode (so close removes the socket only while it is still ours), the wake pipe, and a
        // non-blocking listening socket (the thread accepts until EAGAIN).
        let flags = fcntl(fd, F_GETFL)
        let setUp: (String, Errno)? =
            stat(path, &info) != 0 ? ("stat", .current)
            : pipe(&fds) != 0 ? ("pipe", .current)
            : (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) ? ("fcntl FD_CLOEXEC", .current)
            : (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) ? ("fcntl O_NONBLOCK", .current)
            : nil
        if let (call, e) = setUp {
            unlink(path)
            Glibc.close(fd)
            for p in fds where p >= 0 { Glibc.close(p) }
            throw SystemError(call, path, e)
        }
        inode = UInt64(info.st_ino)
        self.fd = fd
        self.wake = (fds[0], fds[1])
        self.thread = PosixMutex(nil)
        let listenFD = fd, wakeFD = fds[0], served = self.served
        let t = try PosixThread(name: "status-socket") {
            StatusSocket.serve(listenFD: listenFD, wakeFD: wakeFD, answers: Answers(status: provider, snapshot: snapshot, controls: controls),
                               served: served, logger: logger, path: path)
        }
        thread.withLock { $0 = t }
    }

    deinit { close() }

    /// Stops the thread, closes the socket and removes it (if it is still ours). Once.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // One byte into an empty pipe (EINTR retried): the thread's poll returns and it ends.
        if case .failure = FileDescriptor(rawValue: wake.write).writeAll([1]) {
            thread.withLock { $0 }?.detach()
        } else {
            thread.withLock { $0 }?.join()
        }
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

    /// Clients served at once; more wait in the kernel's backlog until one ends.
    public static let maxClients = 16
    /// A client has this long to send its request line (`scangate status` sends it at once).
    public static let requestTimeoutMilliseconds = 1000.0

    /// What the thread answers with.
    struct Answers {
        let status: @Sendable () -> StatusReport
        let snapshot: (@Sendable () -> StatusSnapshot?)?
        let controls: CameraControlsSlot?
    }

    private struct Client {
        let fd: Int32
        var request: [UInt8] = []
        var answer: [UInt8]?
        var offset = 0
        var deadline: MonotonicInstant
    }

    /// One thread, one poll(2) over the listening socket, the wake pipe and up to `maxClients` clients, each
    /// with its own deadline: an idle or slow client delays neither the others nor `close`.
    static func serve(listenFD: Int32, wakeFD: Int32, answers: Answers, served: Counter,
                      logger: Logger, path: String) {
        var clients: [Client] = []
        defer { for c in clients { _ = FileDescriptor(rawValue: c.fd).close() } }
        var buffer = [UInt8](repeating: 0, count: maxRequestBytes + 1)
        while true {
            var fds = [pollfd(fd: listenFD, events: clients.count < maxClients ? Int16(POLLIN) : 0, revents: 0),
                       pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0.fd, events: $0.answer == nil ? Int16(POLLIN) : Int16(POLLOUT), revents: 0) }
            let now = MonotonicInstant.now()
            let timeout: Int32 = clients.map { max(0, $0.deadline.milliseconds(since: now)) }.min().map { Int32($0.rounded(.up)) } ?? -1
            let count = nfds_t(fds.count)
            switch retryOnInterrupt({ poll(&fds, count, timeout) }) {
            case .success: break
            case .failure(let e):
                logger.error("status socket \(path): poll: \(e); scangate status no longer answered")
                return
            }
            if fds[1].revents != 0 { return }

            // Clients, from the last so that removing one keeps the others' indices.
            for i in clients.indices.reversed() {
                let revents = fds[i + 2].revents
                var done = false
                if clients[i].answer == nil, revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    done = !readRequest(&clients[i], buffer: &buffer, answers: answers)
                } else if clients[i].answer != nil, revents & Int16(POLLOUT | POLLHUP | POLLERR) != 0 {
                    switch writeAnswer(&clients[i]) {
                    case .some(true): done = true; served.value.add(1, ordering: .relaxed)
                    case .some(false): done = true
                    case .none: break
                    }
                }
                if !done && MonotonicInstant.now() >= clients[i].deadline {
                    if clients[i].answer != nil {
                        logger.warning("status socket \(path): a client did not read its answer in time", rateLimitKey: "status-slow")
                    }
                    done = true
                }
                if done {
                    _ = FileDescriptor(rawValue: clients[i].fd).close()
                    clients.remove(at: i)
                }
            }

            // New clients, while there is room.
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            while clients.count < maxClients {
                let accepted = retryOnInterrupt { accept(listenFD, nil, nil) }
                guard case .success(let client) = accepted else {
                    if case .failure(let e) = accepted, e.rawValue != EAGAIN && e.rawValue != ECONNABORTED {
                        logger.warning("status socket \(path): accept: \(e)", rateLimitKey: "status-accept")
                    }
                    break
                }
                // Close-on-exec and non-blocking (the daemon never forks; a blocking read would hang this thread).
                let flags = fcntl(client, F_GETFL)
                guard fcntl(client, F_SETFD, FD_CLOEXEC) == 0, flags >= 0, fcntl(client, F_SETFL, flags | O_NONBLOCK) == 0 else {
                    logger.warning("status socket \(path): fcntl on a client: \(Errno.current)", rateLimitKey: "status-accept")
                    _ = FileDescriptor(rawValue: client).close()
                    continue
                }
                clients.append(Client(fd: client, deadline: MonotonicInstant.now().adding(milliseconds: requestTimeoutMilliseconds)))
            }
        }
    }

    /// Reads what the client sent; once the line (or end of file) is in, prepares the answer. False: drop it.
    private static func readRequest(_ c: inout Client, buffer: inout [UInt8], answers: Answers) -> Bool {
        let room = maxRequestBytes + 1 - c.request.count
        let n: Int
        switch buffer.withUnsafeMutableBytes({ FileDescriptor(rawValue: c.fd).read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room])) }) {
        case .success(let count): n = count
        case .failure(let e) where e.rawValue == EAGAIN: return true
        case .failure: return false
        }
        var complete = n == 0
        for b in buffer[0..<n] {
            if b == 0x0A { complete = true; break }
            c.request.append(b)
        }
        if c.request.count > maxRequestBytes { complete = true }
        guard complete else { return true }
        func error(_ message: String) -> [UInt8] { Array((JSONText.object([("error", JSONText.string(message))]) + "\n").utf8) }
        if c.request.count > maxRequestBytes {
            c.answer = error("a request is at most \(maxRequestBytes) bytes")
        } else {
            let text = String(decoding: c.request, as: UTF8.self).trimmingSpaces
            switch text {
            case "status": c.answer = Array((answers.status().json + "\n").utf8)
            case "snapshot":
                if let provide = answers.snapshot {
                    if let snapshot = provide() {
                        let v = snapshot.view
                        c.answer = v.width > StatusSnapshot.maxSide || v.height > StatusSnapshot.maxSide || snapshot.luma.count != v.width * v.height
                            ? error("the frame is \(v.width)x\(v.height); snapshots are at most \(StatusSnapshot.maxSide)x\(StatusSnapshot.maxSide)")
                            : snapshot.encoded
                    } else {
                        c.answer = error("no frame captured yet")
                    }
                } else {
                    c.answer = error("this daemon serves no snapshots")
                }
            default:
                if let line = CameraControlRequests.answer(text, slot: answers.controls) {
                    c.answer = Array((line + "\n").utf8)
                } else {
                    c.answer = error("unknown request \(JSONText.string(text)); send 'status', 'snapshot', 'controls' or 'control NAME=VALUE'")
                }
            }
        }
        c.deadline = MonotonicInstant.now().adding(milliseconds: Double(timeoutMilliseconds))
        return true
    }

    /// Sends what it can of the answer: true when all of it is out, false when the client is gone, nil for more.
    private static func writeAnswer(_ c: inout Client) -> Bool? {
        guard let answer = c.answer else { return false }
        // send with MSG_NOSIGNAL: a client gone mid-answer is EPIPE here, never SIGPIPE for the daemon.
        let offset = c.offset
        let sent = answer.withUnsafeBytes { raw in
            retryOnInterrupt { send(c.fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL)) }
        }
        switch sent {
        case .success(let n):
            c.offset += n
            return c.offset >= answer.count ? true : nil
        case .failure(let e) where e.rawValue == EAGAIN: return nil
        case .failure: return false
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

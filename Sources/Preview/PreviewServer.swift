import Core
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the page shows, asked of the running daemon on demand (never while no one asks).
public struct PreviewBackend: Sendable {
    /// The newest frame with the decoder's view drawn on it, as a JPEG.
    public var frameJPEG: @Sendable () -> Result<[UInt8], PreviewFailure>
    /// The daemon's status document (`status --json`), as it sent it.
    public var statusJSON: @Sendable () -> Result<[UInt8], PreviewFailure>
    /// Its `{"view": …}` line.
    public var viewJSON: @Sendable () -> Result<[UInt8], PreviewFailure>
    /// Any other request line to the status socket (`controls`, `control NAME=VALUE`), its answer as it is.
    public var ask: @Sendable (String) -> Result<[UInt8], PreviewFailure>

    public init(frameJPEG: @escaping @Sendable () -> Result<[UInt8], PreviewFailure>,
                statusJSON: @escaping @Sendable () -> Result<[UInt8], PreviewFailure>,
                viewJSON: @escaping @Sendable () -> Result<[UInt8], PreviewFailure>,
                ask: @escaping @Sendable (String) -> Result<[UInt8], PreviewFailure>) {
        self.frameJPEG = frameJPEG
        self.statusJSON = statusJSON
        self.viewJSON = viewJSON
        self.ask = ask
    }
}

public struct PreviewFailure: Error, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// `scangate preview`'s routes over an `HTTPDaemon`:
/// - `/` the page, `/stream.mjpg` the MJPEG stream (multipart/x-mixed-replace), `/view.json`,
///   `/status.json`, `/clients.json` (`{"clients":N,"connections":M}`: streams and TCP connections now),
///   `/controls.json` and `POST /control` with the form `key=K&value=V` (forwarded to the daemon as
///   `controls` and `control K=V`; the daemon's answer, `{"error": …}` included, is passed on as it is);
/// - each stream at most `fps` frames a second, at most `maxClients` streams at once (more: 503);
/// - frames are asked of the daemon only by a stream that is running: with no stream client, nothing polls;
/// - with a token, every request carries `?token=` or `Authorization: Bearer`, else 401.
public final class PreviewServer: Sendable {
    public struct Options: Sendable {
        public var fps: Int
        public var maxClients: Int
        public var token: PreviewToken?
        public var limits: HTTPDaemon.Limits
        public init(fps: Int = 5, maxClients: Int = 4, token: PreviewToken? = nil, limits: HTTPDaemon.Limits = .init()) {
            self.fps = fps
            self.maxClients = maxClients
            self.token = token
            self.limits = limits
        }
    }

    static let boundary = "scangateframe"

    private let options: Options
    private let backend: PreviewBackend
    private let logger: Logger
    private let frames: FrameCache
    private let streams = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let http = PosixMutex<HTTPDaemon?>(nil)

    /// Streams being served now.
    public var clientCount: Int { streams.load(ordering: .relaxed) }

    public init(listenFD: Int32, address: String, options: Options, backend: PreviewBackend, logger: Logger) throws(SystemError) {
        self.options = options
        self.backend = backend
        self.logger = logger
        self.frames = FrameCache(fetch: backend.frameJPEG)
        let timeout = options.limits.timeoutSeconds
        let daemon = try HTTPDaemon(listenFD: listenFD, address: address, limits: options.limits, onDropped: { [logger] in
            logger.warning("preview: dropped a client that did not send its request within \(timeout) s", rateLimitKey: "preview-slow")
        }) { [weak self] request in
            guard let self else { return .text(503, "stopping") }
            return self.route(request)
        }
        http.withLock { $0 = daemon }
    }

    /// Ends every stream and stops the HTTP daemon (joins its threads). Once.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        http.withLock { d -> HTTPDaemon? in let old = d; d = nil; return old }?.stop()
    }

    // MARK: - Routes

    func route(_ request: HTTPRequest) -> HTTPResponse {
        if let token = options.token {
            let bearer = request.header("Authorization").flatMap { h -> String? in
                h.hasPrefix("Bearer ") ? String(h.dropFirst(7)) : nil
            }
            guard let given = request.argument("token") ?? bearer, token.matches(Array(given.utf8)) else {
                return .text(401, "a token is needed: add ?token=... to the address or send Authorization: Bearer ...",
                             headers: [("WWW-Authenticate", "Bearer")])
            }
        }
        switch (request.method, request.path) {
        case ("GET", "/"), ("HEAD", "/"):
            return .bytes(status: 200, contentType: "text/html; charset=utf-8", body: Array(PreviewPage.html(fps: options.fps).utf8),
                          headers: [("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self'")])
        case ("GET", "/stream.mjpg"):
            return stream()
        case ("GET", "/view.json"):
            return json(backend.viewJSON())
        case ("GET", "/status.json"):
            return json(backend.statusJSON())
        case ("GET", "/clients.json"):
            return .bytes(status: 200, contentType: "application/json",
                          body: Array("{\"clients\":\(clientCount),\"connections\":\(http.withLock { $0 }?.connectionCount ?? 0)}\n".utf8))
        case ("GET", "/controls.json"):
            return json(backend.ask("controls"))
        case ("POST", "/control"):
            guard let key = request.form["key"] ?? request.argument("key"), let value = request.form["value"] ?? request.argument("value"),
                  !key.isEmpty, key.utf8.count <= 64, value.utf8.count <= 64,
                  (key + value).unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "=" }) else {
                return .text(400, "POST /control with the form key=NAME&value=VALUE (or them in the query): a control's key and value, "
                             + "each 1 to 64 printable characters without '='")
            }
            return json(backend.ask("control \(key)=\(value)"))
        case (_, "/"), (_, "/stream.mjpg"), (_, "/view.json"), (_, "/status.json"), (_, "/clients.json"), (_, "/controls.json"), (_, "/control"):
            return .text(405, "method not allowed here")
        default:
            return .text(404, "not found; the page is at /")
        }
    }

    private func json(_ answer: Result<[UInt8], PreviewFailure>) -> HTTPResponse {
        switch answer {
        case .success(let bytes): return .bytes(status: 200, contentType: "application/json", body: bytes)
        case .failure(let f):
            return .bytes(status: 502, contentType: "application/json",
                          body: Array((JSONText.object([("error", JSONText.string(f.message))]) + "\n").utf8))
        }
    }

    private func stream() -> HTTPResponse {
        var now = streams.load(ordering: .relaxed)
        while true {
            guard now < options.maxClients else {
                logger.warning("preview: a stream refused: \(options.maxClients) already watching (--max-clients)", rateLimitKey: "preview-full")
                return .text(503, "\(options.maxClients) clients already watch this preview (--max-clients); try again later")
            }
            let (exchanged, original) = streams.compareExchange(expected: now, desired: now + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            now = original
        }
        logger.info("preview: a client started watching (\(now + 1) now)")
        let source = MJPEGStream(server: self, intervalMilliseconds: 1000.0 / Double(options.fps))
        return .stream(status: 200, contentType: "multipart/x-mixed-replace; boundary=\(Self.boundary)", source: source)
    }

    fileprivate func streamEnded() {
        let left = streams.subtract(1, ordering: .acquiringAndReleasing).newValue
        logger.info("preview: a client stopped watching (\(left) now)")
    }

    fileprivate var isStopping: Bool { stopping.load(ordering: .acquiring) }

    fileprivate func frame(maxAgeMilliseconds: Double) -> Result<[UInt8], PreviewFailure> {
        frames.jpeg(maxAgeMilliseconds: maxAgeMilliseconds)
    }

    fileprivate func log(_ message: String) {
        logger.warning("preview: \(message)", rateLimitKey: "preview-frame")
    }
}

/// The newest JPEG, shared by the streams: one that is younger than a stream's interval is sent again
/// rather than asked for twice. Asked only from a stream's read.
final class FrameCache: Sendable {
    private struct Entry { var at: MonotonicInstant; var jpeg: [UInt8] }
    private let fetch: @Sendable () -> Result<[UInt8], PreviewFailure>
    private let entry = PosixMutex<Entry?>(nil)

    init(fetch: @escaping @Sendable () -> Result<[UInt8], PreviewFailure>) { self.fetch = fetch }

    func jpeg(maxAgeMilliseconds: Double) -> Result<[UInt8], PreviewFailure> {
        entry.withLock { e -> Result<[UInt8], PreviewFailure> in
            let now = MonotonicInstant.now()
            if let cached = e, now.milliseconds(since: cached.at) < maxAgeMilliseconds { return .success(cached.jpeg) }
            let result = fetch()
            if case .success(let jpeg) = result { e = Entry(at: now, jpeg: jpeg) }
            return result
        }
    }
}

/// One client's stream: each part is a JPEG, no sooner than `interval` after the last. Read only on its
/// connection's thread (MHD's thread per connection), so its buffer needs no lock; the lock is there for
/// the Sendable promise.
final class MJPEGStream: HTTPStreamSource {
    private struct State { var pending: [UInt8] = []; var offset = 0; var nextDue = MonotonicInstant.now(); var ended = false }
    private let server: PreviewServer
    private let interval: Double
    private let state = PosixMutex(State())

    init(server: PreviewServer, intervalMilliseconds: Double) {
        self.server = server
        self.interval = intervalMilliseconds
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        state.withLock { s -> Int? in
            while s.offset >= s.pending.count {
                // Wait for the next frame's time in short steps, so that a stop is seen at once.
                while true {
                    if server.isStopping { return nil }
                    let wait = s.nextDue.milliseconds(since: .now())
                    if wait <= 0 { break }
                    var ts = timespec(tv_sec: 0, tv_nsec: Int(min(wait, 50) * 1_000_000))
                    _ = nanosleep(&ts, nil)
                }
                s.nextDue = MonotonicInstant.now().adding(milliseconds: interval)
                switch server.frame(maxAgeMilliseconds: interval) {
                case .success(let jpeg):
                    let header = "--\(PreviewServer.boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(jpeg.count)\r\n\r\n"
                    s.pending = Array(header.utf8) + jpeg + Array("\r\n".utf8)
                    s.offset = 0
                case .failure(let f):
                    server.log("a stream ends: \(f.message)")
                    return nil
                }
            }
            let n = min(buffer.count, s.pending.count - s.offset)
            s.pending.withUnsafeBytes { src in
                if let from = src.baseAddress, let to = buffer.baseAddress { to.copyMemory(from: from + s.offset, byteCount: n) }
            }
            s.offset += n
            return n
        }
    }

    func finished() {
        let first = state.withLock { s -> Bool in let was = s.ended; s.ended = true; return !was }
        if first { server.streamEnded() }
    }
}

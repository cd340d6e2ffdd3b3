import CMicroHTTPD
import Core
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A request as libmicrohttpd parsed it: method, path, lookups of its headers and query arguments, and a
/// POST's url-encoded form fields (MHD's post processor decoded them; at most `FormBody.maxBytes`).
public struct HTTPRequest {
    public let method: String
    public let path: String
    public let form: [String: String]
    let connection: OpaquePointer

    public func header(_ name: String) -> String? { lookup(.HEADER_KIND, name) }
    public func argument(_ name: String) -> String? { lookup(.GET_ARGUMENT_KIND, name) }

    private func lookup(_ kind: MHD_ValueKind, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
    }
}

/// What a handler answers: bytes, or a stream that MHD pulls from on the connection's own thread.
public enum HTTPResponse {
    case bytes(status: UInt32, contentType: String, body: [UInt8], headers: [(String, String)] = [])
    case stream(status: UInt32, contentType: String, source: HTTPStreamSource)

    public static func text(_ status: UInt32, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .bytes(status: status, contentType: "text/plain; charset=utf-8", body: Array((message + "\n").utf8), headers: headers)
    }
}

/// A body of unknown length. `read` runs on the connection's thread (thread per connection), may block
/// until it has bytes, and returns how many it wrote, or nil at the end. `finished` runs once, when
/// MHD releases the response (the client left, the stream ended or the server stopped).
public protocol HTTPStreamSource: AnyObject, Sendable {
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
    func finished()
}

/// libmicrohttpd's daemon, one per `HTTPDaemon`: a thread per connection (a stream's reads may block
/// while they wait for the next frame), at most `connectionLimit` connections (more are closed on
/// accept), each dropped after `timeoutSeconds` without traffic and given `memoryLimit` bytes for its
/// request (a longer request line or header block is refused by MHD with a 4xx). MHD's timeout counts
/// only silence, so a client that trickles a byte a second would hold its thread for good: a reaper
/// thread shuts down (shutdown(2); MHD then closes it) any connection whose request has not all come
/// within `timeoutSeconds` of its connection or of its previous request's end. The handler and the
/// connection notification are reached through an Unmanaged reference to this object, retained while
/// MHD runs and released after MHD_stop_daemon has joined every thread.
public final class HTTPDaemon: Sendable {
    public struct Limits: Sendable {
        public var connectionLimit: UInt32
        public var timeoutSeconds: UInt32
        public var memoryLimit: Int
        public init(connectionLimit: UInt32 = 64, timeoutSeconds: UInt32 = 10, memoryLimit: Int = 32 * 1024) {
            self.connectionLimit = connectionLimit
            self.timeoutSeconds = timeoutSeconds
            self.memoryLimit = memoryLimit
        }
    }

    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let handler: Handler
    private let onConnections: @Sendable (Int) -> Void
    /// The MHD_Daemon pointer: used only under this lock, by `stop`.
    private struct Handle: @unchecked Sendable { let pointer: OpaquePointer }
    private let daemon = PosixMutex<Handle?>(nil)
    private let connections = Atomic<Int>(0)
    public let address: String
    private let limits: Limits
    /// Open connections by their MHD_Connection address: the socket, and since when it waits for a
    /// request (nil while one is being answered). Entries leave on MHD's CLOSED notification, which
    /// comes before MHD closes the socket: a shutdown under this lock never reaches a reused descriptor.
    private struct Waiting { var fd: Int32; var since: MonotonicInstant?; var reaped = false }
    private let open = PosixMutex<[UInt: Waiting]>([:])
    private let reaperStop: WakePipe
    private let reaper = PosixMutex<PosixThread?>(nil)
    private let onDropped: @Sendable () -> Void

    /// Open TCP connections now.
    public var connectionCount: Int { connections.load(ordering: .relaxed) }

    /// Starts serving on `listenFD` (a bound, listening socket; MHD owns it from here and closes it on
    /// stop; on a failure to start it is closed here).
    public init(listenFD: Int32, address: String, limits: Limits, onConnections: @escaping @Sendable (Int) -> Void = { _ in },
                onDropped: @escaping @Sendable () -> Void = {}, handler: @escaping Handler) throws(SystemError) {
        self.handler = handler
        self.onConnections = onConnections
        self.onDropped = onDropped
        self.address = address
        self.limits = limits
        do throws(SystemError) {
            reaperStop = try WakePipe(purpose: "preview reaper")
        } catch {
            close(listenFD)
            throw error
        }
        let context = Unmanaged.passRetained(self)
        let flags = MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_AUTO.rawValue
            | MHD_USE_ITC.rawValue
        let started = scangate_mhd_start(UInt32(flags), listenFD, HTTPDaemon.access, context.toOpaque(), HTTPDaemon.notify, HTTPDaemon.completed,
                                         limits.connectionLimit, limits.timeoutSeconds, limits.memoryLimit)
        guard let started else {
            let e = Errno.current
            context.release()
            close(listenFD)
            throw SystemError("MHD_start_daemon (libmicrohttpd could not start its threads)", address, e)
        }
        daemon.withLock { $0 = Handle(pointer: started) }
        do throws(SystemError) {
            let t = try PosixThread(name: "preview-reaper") { [self] in reap() }
            reaper.withLock { $0 = t }
        } catch {
            stop()
            throw error
        }
    }

    /// Every half second: shuts down the connections that have waited too long for their request.
    private func reap() {
        let timeout = Double(limits.timeoutSeconds) * 1000
        while !reaperStop.wait(milliseconds: 500) {
            let now = MonotonicInstant.now()
            let dropped = open.withLock { table -> Int in
                var n = 0
                for (key, w) in table where !w.reaped {
                    guard let since = w.since, now.milliseconds(since: since) > timeout else { continue }
                    _ = shutdown(w.fd, Int32(SHUT_RDWR))
                    table[key]?.reaped = true
                    n += 1
                }
                return n
            }
            for _ in 0..<dropped { onDropped() }
        }
    }

    /// MHD_stop_daemon: stops accepting, closes every connection, joins the threads. Once; then releases the
    /// reference the callbacks used.
    public func stop() {
        reaperStop.signal()
        reaper.withLock { t -> PosixThread? in let old = t; t = nil; return old }?.join()
        guard let d = daemon.withLock({ s -> Handle? in let d = s; s = nil; return d }) else { return }
        MHD_stop_daemon(d.pointer)
        Unmanaged.passUnretained(self).release()
    }

    // MARK: - Callbacks from C

    private static let notify: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        guard let cls, let connection else { return }
        let me = Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue()
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        let n: Int
        if code == .CONNECTION_NOTIFY_STARTED {
            let fd = scangate_mhd_connection_fd(connection)
            if fd >= 0 { me.open.withLock { $0[key] = Waiting(fd: fd, since: .now()) } }
            n = me.connections.add(1, ordering: .relaxed).newValue
        } else {
            me.open.withLock { _ = $0.removeValue(forKey: key) }
            n = me.connections.subtract(1, ordering: .relaxed).newValue
        }
        me.onConnections(n)
    }

    /// A request answered (or abandoned): its form (if any) is released, and the connection waits for its
    /// next request from now.
    private static let completed: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
        if let requestContext, let context = requestContext.pointee {
            Unmanaged<FormBody>.fromOpaque(context).release()
            requestContext.pointee = nil
        }
        guard let cls, let connection else { return }
        let me = Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue()
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        me.open.withLock { $0[key]?.since = .now() }
    }

    private static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, requestContext in
        guard let cls, let connection, let url, let method, let uploadSize, let requestContext else { return .NO }
        let me = Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue()
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        me.open.withLock { $0[key]?.since = nil }
        let verb = String(cString: method)
        var form: [String: String] = [:]
        if verb == "POST" {
            // A POST's body comes in later calls: the first sets up the form, the next feed it (MHD's post
            // processor decodes a url-encoded or multipart form), the one with no more data answers.
            // The form is released by the request-completed notification.
            guard let context = requestContext.pointee else {
                requestContext.pointee = Unmanaged.passRetained(FormBody(connection)).toOpaque()
                return .YES
            }
            let body = Unmanaged<FormBody>.fromOpaque(context).takeUnretainedValue()
            if uploadSize.pointee > 0 {
                body.feed(uploadData, uploadSize.pointee)
                uploadSize.pointee = 0
                return .YES
            }
            guard !body.overflowed else {
                return me.respond(connection, .text(413, "a form is at most \(FormBody.maxBytes) bytes"))
            }
            form = body.fields
        } else if uploadSize.pointee > 0 {
            // Any other body is not read: the answer is queued at once and MHD discards the rest.
            uploadSize.pointee = 0
            return .YES
        }
        let request = HTTPRequest(method: verb, path: String(cString: url), form: form, connection: connection)
        return me.respond(connection, me.handler(request))
    }

    private static let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
        guard let cls, let buffer else { return scangate_mhd_end_with_error() }
        let source = Unmanaged<AnyObject>.fromOpaque(cls).takeUnretainedValue() as? HTTPStreamSource
        guard let source else { return scangate_mhd_end_with_error() }
        guard let n = source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max)) else {
            return scangate_mhd_end_of_stream()
        }
        return n
    }

    private static let streamFree: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        let unmanaged = Unmanaged<AnyObject>.fromOpaque(cls)
        (unmanaged.takeUnretainedValue() as? HTTPStreamSource)?.finished()
        unmanaged.release()
    }

    private func respond(_ connection: OpaquePointer, _ answer: HTTPResponse) -> MHD_Result {
        let response: OpaquePointer?
        let status: UInt32
        var headers: [(String, String)] = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]
        switch answer {
        case .bytes(let s, let type, let body, let extra):
            status = s
            headers += [("Content-Type", type)] + extra
            response = body.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let s, let type, let source):
            status = s
            headers.append(("Content-Type", type))
            let context = Unmanaged<AnyObject>.passRetained(source as AnyObject)
            response = MHD_create_response_from_callback(scangate_mhd_size_unknown(), 32 * 1024, HTTPDaemon.streamReader,
                                                         context.toOpaque(), HTTPDaemon.streamFree)
            if response == nil {
                source.finished()
                context.release()
            }
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in headers {
            guard MHD_add_response_header(response, name, value) == .YES else { return .NO }
        }
        return MHD_queue_response(connection, status, response)
    }
}

/// A POST's form as MHD's post processor decodes it, for one request on one connection's thread (MHD
/// calls the handler for a connection on that connection's thread only; hence unchecked Sendable).
/// At most `maxBytes` of keys and values; past that the fields are dropped and the request gets 413.
final class FormBody: @unchecked Sendable {
    static let maxBytes = 1024
    private(set) var fields: [String: String] = [:]
    private(set) var overflowed = false
    private var bytes = 0
    private var processor: OpaquePointer?

    init(_ connection: OpaquePointer) {
        // nil when the body is not a form (its Content-Type): then the request has no fields.
        processor = MHD_create_post_processor(connection, 1024, FormBody.iterator,
                                              Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if let processor { _ = MHD_destroy_post_processor(processor) }
    }

    func feed(_ data: UnsafePointer<CChar>?, _ count: Int) {
        guard let processor, let data, !overflowed else { return }
        // A malformed form ends the processing (.NO): the fields decoded so far stay, and are checked as any.
        _ = MHD_post_process(processor, data, count)
    }

    private static let iterator: MHD_PostDataIterator = { cls, _, key, _, _, _, data, _, size in
        guard let cls, let key else { return .NO }
        let me = Unmanaged<FormBody>.fromOpaque(cls).takeUnretainedValue()
        let name = String(cString: key)
        me.bytes += name.utf8.count + size
        guard me.bytes <= maxBytes else {
            me.overflowed = true
            me.fields = [:]
            return .NO
        }
        let chunk = data.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
        me.fields[name, default: ""] += chunk
        return .YES
    }
}

import CMosquitto
import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// A libmosquitto call that failed: the call, what it was about, mosquitto_strerror's text, the errno
/// when the code is MOSQ_ERR_ERRNO, and libmosquitto's own error log line (OpenSSL's reason for a TLS
/// failure) when there was one.
public struct MQTTError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let subject: String
    public let code: Int32
    public let errno: Errno?
    public let detail: String?

    public init(_ operation: String, _ subject: String, code: Int32, errno: Errno? = nil, detail: String? = nil) {
        self.operation = operation
        self.subject = subject
        self.code = code
        self.errno = errno
        self.detail = detail
    }

    /// The text of a MOSQ_ERR_* code (mosquitto_strerror; for MOSQ_ERR_ERRNO, the errno's).
    public static func text(code: Int32, errno: Errno?) -> String {
        if code == MOSQ_ERR_ERRNO.rawValue, let errno { return errno.description }
        return String(cString: mosquitto_strerror(code))
    }

    public var description: String {
        var text = "\(operation) \(subject): \(MQTTError.text(code: code, errno: errno))"
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        return text
    }

    public var isTLS: Bool { code == MOSQ_ERR_TLS.rawValue || code == MOSQ_ERR_TLS_HANDSHAKE.rawValue }

    /// The packet would be larger than the broker's Maximum Packet Size (from its CONNACK).
    public var isOversize: Bool { code == MOSQ_ERR_OVERSIZE_PACKET.rawValue }
}

/// An MQTT v5 property list (`mosquitto_property *`), owned: freed with mosquitto_property_free_all when it goes.
final class MosquittoProperties {
    private(set) var list: OpaquePointer?

    init() {}

    deinit { mosquitto_property_free_all(&list) }

    func addInt32(_ identifier: Int32, _ value: UInt32, name: String, subject: String) throws(MQTTError) {
        let rc = mosquitto_property_add_int32(&list, identifier, value)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError("mosquitto_property_add_int32(\(name), \(value))", subject, code: rc)
        }
    }
}

/// Owns libmosquitto's process-wide set-up (mosquitto_lib_init: OpenSSL and the socket layer) and
/// its clean-up. libmosquitto counts init and cleanup calls itself, but not atomically, so: the daemon
/// makes one of these at start, on its main thread before any MQTT thread runs, and hands it to every
/// MQTT output; each session keeps a strong reference, so mosquitto_lib_cleanup runs once the last
/// handle is gone, never under a live one. No global state on the Swift side.
public final class MosquittoLibrary: Sendable {
    /// "2.0.11".
    public let version: String

    public init() throws(MQTTError) {
        let rc = mosquitto_lib_init()
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError("mosquitto_lib_init", "libmosquitto", code: rc, errno: .current)
        }
        var major: Int32 = 0, minor: Int32 = 0, revision: Int32 = 0
        _ = mosquitto_lib_version(&major, &minor, &revision)
        version = "\(major).\(minor).\(revision)"
    }

    deinit { _ = mosquitto_lib_cleanup() }
}

/// What libmosquitto's callbacks report, recorded during a `loop()` call and handled after it (so no
/// libmosquitto call is made from inside a callback). Confined to the session thread.
final class MosquittoCallbacks {
    /// CONNACK's return code (0: accepted).
    var connack: Int32?
    /// The disconnect's reason (0: we asked for it).
    var disconnected: Int32?
    /// QoS 1 publishes the broker answered (PUBACK), in the order they came: the message id and the
    /// MQTT v5 reason code (below 0x80: accepted; 0x87: not authorised by the broker's ACL, ...).
    var acknowledged: [(mid: Int32, reason: Int32)] = []
    /// SUBACKs: the message id and the granted QoS of the first filter (0x80 and above: refused).
    var subscribed: [(mid: Int32, granted: Int32)] = []
    struct Message {
        var topic: String
        var payload: [UInt8]
        var retained: Bool
        /// The payload was longer than `maxPayload`; `payload` holds only a prefix.
        var truncated: Bool
    }
    var messages: [Message] = []
    /// The last error-level log line of libmosquitto (OpenSSL's reason for a TLS failure).
    var lastError: String?
    var maxPayload = 4096
}

/// One libmosquitto handle (`struct mosquitto *`): made for one connection attempt, used by the one
/// session thread that made it, destroyed in deinit on every path. Each call's return code is checked and
/// thrown as an `MQTTError` naming the call and the broker.
final class MosquittoClient {
    private let handle: OpaquePointer
    private let library: MosquittoLibrary
    let callbacks = MosquittoCallbacks()
    /// "broker host:port": the subject of errors.
    let subject: String

    init(library: MosquittoLibrary, clientID: String, subject: String) throws(MQTTError) {
        self.library = library
        self.subject = subject
        // clean_session: the broker keeps no state for us between connections; the spool is the only
        // truth about what was delivered, and the subscription is made again on each connection.
        let context = Unmanaged.passUnretained(callbacks).toOpaque()
        guard let h = mosquitto_new(clientID, true, context) else {
            let e = Errno.current
            throw MQTTError("mosquitto_new", "client id \(clientID)", code: e == Errno(rawValue: EINVAL) ? MOSQ_ERR_INVAL.rawValue : MOSQ_ERR_NOMEM.rawValue)
        }
        handle = h
        // MQTT v5: a PUBACK carries a reason code, so an event the broker's ACL refused is known as refused
        // (under 3.1.1 the broker acknowledges it all the same and it would be lost without a trace).
        let rc = mosquitto_int_option(h, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            mosquitto_destroy(h)
            throw MQTTError("mosquitto_int_option(PROTOCOL_VERSION, 5)", subject, code: rc)
        }
        mosquitto_connect_callback_set(h) { _, context, rc in
            MosquittoClient.callbacks(context)?.connack = rc
        }
        mosquitto_disconnect_callback_set(h) { _, context, rc in
            MosquittoClient.callbacks(context)?.disconnected = rc
        }
        mosquitto_publish_v5_callback_set(h) { _, context, mid, reason, _ in
            MosquittoClient.callbacks(context)?.acknowledged.append((mid, reason))
        }
        mosquitto_subscribe_callback_set(h) { _, context, mid, count, granted in
            let first = count > 0 ? (granted?[0] ?? 0x80) : 0x80
            MosquittoClient.callbacks(context)?.subscribed.append((mid, first))
        }
        mosquitto_message_callback_set(h) { _, context, message in
            guard let c = MosquittoClient.callbacks(context), let m = message?.pointee, let topic = m.topic else { return }
            let length = Int(max(0, m.payloadlen))
            let kept = min(length, c.maxPayload + 1)
            var payload: [UInt8] = []
            if kept > 0, let p = m.payload {
                payload = Array(UnsafeRawBufferPointer(start: p, count: kept))
            }
            c.messages.append(MosquittoCallbacks.Message(topic: String(cString: topic), payload: payload,
                                                         retained: m.retain, truncated: length > c.maxPayload))
        }
        mosquitto_log_callback_set(h) { _, context, level, text in
            guard level & Int32(MOSQ_LOG_ERR) != 0, let text else { return }
            MosquittoClient.callbacks(context)?.lastError = String(cString: text)
        }
    }

    deinit { mosquitto_destroy(handle) }

    private static func callbacks(_ context: UnsafeMutableRawPointer?) -> MosquittoCallbacks? {
        guard let context else { return nil }
        return Unmanaged<MosquittoCallbacks>.fromOpaque(context).takeUnretainedValue()
    }

    private func check(_ rc: Int32, _ operation: String, _ subject: String? = nil) throws(MQTTError) {
        guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
        let e: Errno? = rc == MOSQ_ERR_ERRNO.rawValue ? .current : nil
        throw MQTTError(operation, subject ?? self.subject, code: rc, errno: e, detail: callbacks.lastError)
    }

    func setWill(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTError) {
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_will_set(handle, topic, Int32(raw.count), raw.baseAddress, qos, retain)
        }
        try check(rc, "mosquitto_will_set", "topic \(topic)")
    }

    func setCredentials(username: String, password: String?) throws(MQTTError) {
        try check(mosquitto_username_pw_set(handle, username, password), "mosquitto_username_pw_set", "user \(username)")
    }

    /// TLS with the broker's certificate checked against `caFile` (nil: the system's CAs) and its host
    /// name checked (tls_insecure off); a client certificate when `certFile` and `keyFile` are given.
    func setTLS(caFile: String?, certFile: String?, keyFile: String?) throws(MQTTError) {
        if let caFile {
            try check(mosquitto_tls_set(handle, caFile, nil, certFile, keyFile, nil), "mosquitto_tls_set",
                      "CA \(caFile)" + (certFile.map { ", certificate \($0)" } ?? ""))
        } else {
            try check(mosquitto_int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "mosquitto_int_option(TLS_USE_OS_CERTS)")
            if let certFile {
                // tls_set needs a CA file or path: the system's directory, with the OS certificates on.
                try check(mosquitto_tls_set(handle, nil, "/etc/ssl/certs", certFile, keyFile, nil), "mosquitto_tls_set",
                          "certificate \(certFile)")
            }
        }
        // SSL_VERIFY_PEER (1); TLS 1.2 or later is what libmosquitto 2.0 negotiates by default.
        try check(mosquitto_tls_opts_set(handle, 1, nil, nil), "mosquitto_tls_opts_set")
        try check(mosquitto_tls_insecure_set(handle, false), "mosquitto_tls_insecure_set")
    }

    func setMaxInflight(_ count: Int) throws(MQTTError) {
        try check(mosquitto_max_inflight_messages_set(handle, UInt32(count)), "mosquitto_max_inflight_messages_set")
    }

    /// Starts a non-blocking connection (the TCP connect and TLS handshake finish in `loop()`). The host
    /// name is resolved here, on the calling thread (getaddrinfo blocks).
    ///
    /// CONNECT carries the MQTT v5 Maximum Packet Size `maximumPacketSize` (MQTT 5.0, 3.1.2.11.4): the
    /// broker must not send this client a larger packet (MQTT-3.1.2-24) and drops a PUBLISH that would be
    /// larger, as if it had been sent (MQTT-3.1.2-25; mosquitto logs "Dropping too large outgoing
    /// PUBLISH"). It bounds only what comes in: what this client publishes is bounded by the broker's own
    /// Maximum Packet Size from CONNACK (a publish over it fails with MOSQ_ERR_OVERSIZE_PACKET).
    /// Without it libmosquitto would read a 200 MB command whole before our callback could refuse it.
    func connectAsync(host: String, port: Int, keepalive: Int, maximumPacketSize: UInt32) throws(MQTTError) {
        callbacks.lastError = nil
        let properties = MosquittoProperties()
        try properties.addInt32(MosquittoClient.propertyMaximumPacketSize, maximumPacketSize,
                                name: "MAXIMUM_PACKET_SIZE", subject: subject)
        // libmosquitto 2.0 has no asynchronous connect that takes CONNECT properties: only the blocking
        // mosquitto_connect_bind_v5 does. It checks them and copies them into the handle (the properties
        // every later connect of the handle sends) before it checks its other arguments: given no host it
        // stops right there with MOSQ_ERR_INVAL, having connected nothing, and mosquitto_connect_async
        // then sends them (lib/connect.c, mosquitto__reconnect). Any other code means they were refused.
        let stored = mosquitto_connect_bind_v5(handle, nil, Int32(port), Int32(keepalive), nil, properties.list)
        guard stored == MOSQ_ERR_INVAL.rawValue else {
            throw MQTTError("mosquitto_connect_bind_v5 (CONNECT properties, no host)", subject,
                            code: stored == MOSQ_ERR_SUCCESS.rawValue ? MOSQ_ERR_UNKNOWN.rawValue : stored,
                            errno: stored == MOSQ_ERR_ERRNO.rawValue ? .current : nil)
        }
        try check(mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive)), "connect to")
    }

    /// Queues a publish; returns its message id (matched by the PUBACK for QoS 1).
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_publish(handle, &mid, topic, Int32(raw.count), raw.baseAddress, qos, retain)
        }
        try check(rc, "publish to", "topic \(topic) on \(subject)")
        return mid
    }

    /// Queues a publish with the MQTT v5 Message Expiry Interval (3.3.2.3.3): the broker drops the
    /// message, retained or queued, after `expirySeconds`.
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool, expirySeconds: UInt32) throws(MQTTError) -> Int32 {
        let properties = MosquittoProperties()
        try properties.addInt32(MosquittoClient.propertyMessageExpiryInterval, expirySeconds, name: "MESSAGE_EXPIRY_INTERVAL", subject: subject)
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_publish_v5(handle, &mid, topic, Int32(raw.count), raw.baseAddress, qos, retain, properties.list)
        }
        try check(rc, "publish to", "topic \(topic) on \(subject)")
        return mid
    }

    /// SUBSCRIBE with MQTT v5 subscription options (`MQTT_SUB_OPT_*`, 3.8.3.1).
    func subscribe(_ filter: String, qos: Int32, options: Int32 = 0) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        try check(mosquitto_subscribe_v5(handle, &mid, filter, qos, options, nil), "subscribe to", "\(filter) on \(subject)")
        return mid
    }

    /// Retain As Published (MQTT v5, 3.8.3.1): the broker keeps the RETAIN flag of a message forwarded to
    /// an existing subscription (otherwise it clears it, and a command published with retain while the
    /// kiosk is connected would look live).
    static let retainAsPublished = Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue)
    /// The Message Expiry Interval property's identifier, 2 (MQTT 5.0 2.2.2.2).
    static let propertyMessageExpiryInterval = Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue)
    /// No Local (MQTT v5, 3.8.3.1): the broker does not send this client's own messages back to it.
    static let noLocal = Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue)

    /// The Maximum Packet Size property's identifier, 39 (MQTT 5.0 2.2.2.2).
    static let propertyMaximumPacketSize = Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue)

    func disconnect() throws(MQTTError) {
        try check(mosquitto_disconnect(handle), "disconnect from")
    }

    /// One pass of libmosquitto's network loop without waiting (the caller polled the socket):
    /// reads, writes, continues a TLS handshake, sends keepalive pings. Returns MOSQ_ERR_* (0: fine).
    func loop() -> Int32 {
        mosquitto_loop(handle, 0, 1)
    }

    /// The connection's socket, or -1.
    var socket: Int32 { mosquitto_socket(handle) }
    var wantsWrite: Bool { mosquitto_want_write(handle) }

    /// An MQTT v5 reason code as text ("Not authorized").
    static func reasonText(_ code: Int32) -> String { String(cString: mosquitto_reason_string(code)) + " (reason \(code))" }

    /// mosquitto_pub_topic_check: a topic a client may publish to (no wildcard, valid UTF-8, not too long).
    static func isPublishTopic(_ topic: String) -> Bool { mosquitto_pub_topic_check(topic) == MOSQ_ERR_SUCCESS.rawValue }
    /// mosquitto_sub_topic_check: a valid subscription filter.
    static func isSubscriptionFilter(_ filter: String) -> Bool { mosquitto_sub_topic_check(filter) == MOSQ_ERR_SUCCESS.rawValue }
}

import CMosquitto
import Components
import Core
import Platform
import Runtime
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// The session worker's body: one persistent broker session at a time, reconnected with backoff.
///
/// Its own loop, not mosquitto_loop_start: libmosquitto's "exponential" reconnect delay is
/// delay*(n+1)^2 (1, 4, 9, ... s), not the doubling asked for, and its thread cannot also wait on the
/// spool. Here one worker polls the broker socket and its wake-up (`WorkerInbox.poll`), calls mosquitto_loop(…, 0, 1) for
/// each wake-up (reads, writes, the TLS handshake, keepalive pings) and between calls publishes from
/// the spool, so every libmosquitto call happens on this thread and no callback calls back into it.
/// Each connection attempt has a new handle (mosquitto_new … mosquitto_destroy): with clean sessions
/// and nothing carried over in libmosquitto's memory, the spool alone decides what is sent again.
final class MQTTSession {
    let context: MQTTSessionContext
    let inbox: WorkerInbox<Never>
    let configuration: MQTTConfiguration
    var logger: Logger { context.logger }
    var failedAttempts = 0
    /// How often the broker refused each spooled event (by record number) with a lasting reason.
    var refusals: [UInt64: Int] = [:]

    /// Events published and not yet acknowledged, in publish (= spool) order.
    struct InFlight {
        /// -1: never published (the broker's Maximum Packet Size refuses it before it is sent).
        let mid: Int32
        let record: UInt64
        let next: SpoolPosition
        var acked: Bool
        /// Refused for good by the broker: leaves the spool counted as refused, not delivered.
        var refused: Bool
    }
    var inflight: [InFlight] = []
    /// The next record to publish (nil: the spool's head).
    var cursor: SpoolPosition?
    var spoolExhausted = true
    var lastStateKey = ""
    var nextState = MonotonicInstant(nanoseconds: 0)
    var nextStateCheck = MonotonicInstant(nanoseconds: 0)

    /// Events in flight at once.
    static let window = 32
    static let firstBackoffSeconds = 1.0
    static let maxBackoffSeconds = 60.0
    /// A connection that stayed up this long was a good one: the backoff starts at 1 s again after it.
    /// One that fails sooner (the broker's ACL ends it, another kiosk with the same client id takes the
    /// session over, a message the broker cannot take) goes on doubling, so it is not retried at 1 Hz with
    /// status, discovery and state published each time.
    static let stableSeconds = 30.0
    /// The MQTT v5 Maximum Packet Size this client accepts (CONNECT): a command is at most 4096 bytes, so
    /// 16 KiB is far above anything we must read; the broker drops a larger PUBLISH for us, retained or not.
    static let maximumPacketSize: UInt32 = 16 << 10
    /// With mqtt-policy: a site policy document over MQTT may have up to this many bytes (the Maximum
    /// Packet Size grows by as much); a larger one is refused with a result.
    static let maxPolicyBytes = 256 << 10
    /// Own anti-passback uses published and not yet acknowledged, by message id.
    var passbackInFlight: [Int32: SiteLink.PassbackUse] = [:]
    /// An event the broker refuses this many times with a lasting reason (not authorised, topic or payload
    /// invalid, too large, unspecified) is dropped from the spool, counted and logged, so the ones behind
    /// it are not blocked for ever.
    static let maxRefusals = 3

    init(context: MQTTSessionContext, inbox: WorkerInbox<Never>) {
        self.context = context
        self.inbox = inbox
        self.configuration = context.configuration
    }

    enum End {
        case stopped
        case crashed
        /// `upSeconds`: how long the connection had been accepted (nil: CONNACK never came).
        case failed(String, upSeconds: Double?)
    }

    var subject: String { "broker \(configuration.host):\(configuration.port)" }

    func run() {
        var backoff = MQTTSession.firstBackoffSeconds
        loop: while true {
            if context.state.withLock({ $0.stopping }) { break }
            switch connection() {
            case .stopped, .crashed:
                break loop
            case .failed(let message, let upSeconds):
                let wasConnected = upSeconds != nil
                backoff = MQTTSession.backoff(current: backoff, afterConnectionOf: upSeconds)
                failedAttempts += 1
                let stopping = context.state.withLock { $0.stopping }
                leaveSite()
                setLink(connected: false, detail: "not connected: \(message)"
                        + (stopping ? "" : "; next attempt in \(Int(backoff)) s"), error: message,
                        retryIn: stopping ? nil : Int(backoff))
                if stopping { break loop }
                if wasConnected {
                    logger.warning("mqtt: lost the connection to \(subject): \(message); reconnecting in \(Int(backoff)) s "
                                   + "(events are kept in the spool)", rateLimitKey: "mqtt-lost")
                } else {
                    logger.warning("mqtt: cannot connect to \(subject): \(message); next attempt in \(Int(backoff)) s "
                                   + "(events are kept in the spool)", rateLimitKey: "mqtt-connect")
                }
                if !waitBackoff(seconds: backoff) { break loop }
                backoff = min(backoff * 2, MQTTSession.maxBackoffSeconds)
            }
        }
        leaveSite()
        setLink(connected: false, detail: "stopped", error: nil, retryIn: nil)
        context.bodyFinished()
    }

    /// The wait before the next attempt: `current` (which doubles after each wait), or 1 s again when the
    /// connection that just ended had been up `stableSeconds` (nil: it was never accepted).
    static func backoff(current: Double, afterConnectionOf upSeconds: Double?) -> Double {
        if let up = upSeconds, up >= stableSeconds { return firstBackoffSeconds }
        return current
    }

    /// Waits `seconds`, or until a stop; false when stopping.
    private func waitBackoff(seconds: Double) -> Bool {
        let until = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
        while true {
            if context.state.withLock({ $0.stopping }) { return false }
            let now = MonotonicInstant.now()
            if now >= until { return true }
            inbox.wait(nanoseconds: UInt64(min(until.milliseconds(since: now) + 1, 1000) * 1_000_000))
        }
    }

    /// The link as `MQTTOutput.link` and health show it. Not reported to the daemon's controller link
    /// (the status LED, STATUS=): the broker is not the door controller.
    private func setLink(connected: Bool, detail: String, error: String?, retryIn: Int?) {
        context.state.withLock { s in
            s.connected = connected
            s.detail = detail
            s.retryIn = retryIn
            if let error {
                s.lastError = error
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
        }
    }

    // MARK: - One connection

    /// A handle set up for `configuration`: the will (when `will`), credentials, TLS, the in-flight window.
    static func makeClient(_ configuration: MQTTConfiguration, library: MosquittoLibrary, clientID: String? = nil,
                           will: Bool = true) throws(MQTTError) -> MosquittoClient {
        let s = configuration.settings
        let client = try MosquittoClient(library: library, clientID: clientID ?? configuration.clientID,
                                         subject: "broker \(configuration.host):\(configuration.port)")
        if will { try client.setWill(topic: configuration.topics.status, payload: Array("offline".utf8), qos: 1, retain: true) }
        if !s.username.isEmpty { try client.setCredentials(username: s.username, password: configuration.password) }
        if s.tlsEnabled {
            try client.setTLS(caFile: s.tlsCA == "system" ? nil : s.tlsCA, certFile: s.tlsCert.isEmpty ? nil : s.tlsCert,
                              keyFile: s.tlsKey.isEmpty ? nil : s.tlsKey)
        }
        try client.setMaxInflight(MQTTSession.window + 16)
        return client
    }

    enum StopPhase {
        case running
        case draining(until: MonotonicInstant)
        case offline(mid: Int32, until: MonotonicInstant)
        case disconnecting
    }

    private func connection() -> End {
        let client: MosquittoClient
        do {
            client = try MQTTSession.makeClient(configuration, library: context.dependencies.library)
            let policies = configuration.settings.policy && context.dependencies.site != nil
            if policies { client.callbacks.maxPayload = MQTTSession.maxPolicyBytes }
            try client.connectAsync(host: configuration.host, port: configuration.port, keepalive: configuration.settings.keepaliveSeconds,
                                    maximumPacketSize: MQTTSession.maximumPacketSize + (policies ? UInt32(MQTTSession.maxPolicyBytes) : 0))
        } catch {
            return .failed(describe(error, connected: false), upSeconds: nil)
        }
        let callbacks = client.callbacks
        let connectTimeoutSeconds = max(10, configuration.settings.keepaliveSeconds)
        let connectDeadline = MonotonicInstant.now().adding(milliseconds: Double(connectTimeoutSeconds) * 1000)
        var connected = false
        var connectedAt: MonotonicInstant?
        /// How long the connection has been accepted; nil before CONNACK.
        func up() -> Double? { connectedAt.map { MonotonicInstant.now().milliseconds(since: $0) / 1000 } }
        var hangups = 0
        var phase = StopPhase.running
        inflight = []
        otherMids = [:]
        cursor = nil
        spoolExhausted = false

        while true {
            let flags = context.state.withLock { s -> (stopping: Bool, crash: Bool, deadline: MonotonicInstant, drop: Bool, nudge: Bool, writerDone: Bool) in
                let f = (s.stopping, s.crash, s.deadline, s.dropConnection, s.stateNudge, s.spoolWriterDone)
                s.dropConnection = false
                s.stateNudge = false
                return f
            }
            if flags.crash { return .crashed }
            if flags.stopping && !connected { return .stopped }
            let socket = client.socket
            if flags.drop && socket >= 0 {
                // A connection that ends without DISCONNECT, as after a crash: the broker sends the will.
                if shutdown(socket, Int32(SHUT_RDWR)) != 0 {
                    logger.warning("mqtt: shutdown of the broker socket (test hook): \(Errno.current)")
                }
            }
            guard socket >= 0 else {
                return .failed(callbacks.lastError ?? "the connection closed", upSeconds: up())
            }

            var timeout: Double = connected ? 1000 : min(1000, max(0, connectDeadline.milliseconds(since: .now())))
            if flags.stopping { timeout = min(timeout, 20) }
            let wanted = PollRequest(fd: socket, events: Int16(POLLIN) | (client.wantsWrite ? Int16(POLLOUT) : 0))
            var socketEvents: Int16 = 0
            do {
                socketEvents = try inbox.poll([wanted], until: MonotonicInstant.now().adding(milliseconds: timeout)).revents[0]
            } catch {
                // EINVAL or ENOMEM: nothing was waited for; the loop below still runs libmosquitto once.
                logger.warning("mqtt: poll on the broker socket: \(error)", rateLimitKey: "mqtt-poll")
            }

            let rc = client.loop()
            let errnoAfterLoop = Errno.current

            if let code = callbacks.connack {
                callbacks.connack = nil
                guard code == 0 else {
                    return .failed("the broker refused the connection: \(MosquittoClient.reasonText(code))", upSeconds: nil)
                }
                connected = true
                connectedAt = MonotonicInstant.now()
                do {
                    try announce(client)
                } catch {
                    return .failed(error.description, upSeconds: up())
                }
            }
            let answers = callbacks.acknowledged
            callbacks.acknowledged.removeAll(keepingCapacity: true)
            for answer in answers {
                if let refusal = acknowledge(answer.mid, reason: answer.reason, phase: &phase) {
                    return .failed(refusal, upSeconds: up())
                }
            }
            for sub in callbacks.subscribed where sub.granted >= 0x80 {
                let filter = subscriptions[sub.mid] ?? configuration.topics.commandFilter
                logger.error("mqtt: the broker refused the subscription to \(filter) "
                             + "(\(MosquittoClient.reasonText(sub.granted))): \(Self.loss(of: filter, configuration.topics)) will not arrive; check the broker's ACL",
                             rateLimitKey: "mqtt-subscribe")
            }
            callbacks.subscribed.removeAll()
            let messages = callbacks.messages
            callbacks.messages.removeAll(keepingCapacity: true)
            for message in messages where connected {
                do {
                    try route(message, client: client)
                } catch {
                    return .failed(error.description, upSeconds: up())
                }
            }

            if case .disconnecting = phase {
                if rc != MOSQ_ERR_SUCCESS.rawValue || callbacks.disconnected != nil || client.socket < 0
                    || MonotonicInstant.now() >= flags.deadline {
                    return .stopped
                }
                continue
            }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                if let reason = callbacks.disconnected, reason >= 0x80 {
                    // The broker said why (an MQTT v5 DISCONNECT) before the socket closed.
                    return .failed("the broker closed the connection" + disconnectReason(reason), upSeconds: up())
                }
                let error = MQTTError("connection to", subject, code: rc, errno: rc == MOSQ_ERR_ERRNO.rawValue ? errnoAfterLoop : nil,
                                      detail: callbacks.lastError)
                return .failed(describe(error, connected: connected), upSeconds: up())
            }
            if callbacks.disconnected != nil {
                return .failed("the broker closed the connection" + disconnectReason(callbacks.disconnected)
                               + (callbacks.lastError.map { " (\($0))" } ?? "")
                               + (connected ? "" : certificateHint()), upSeconds: up())
            }

            let now = MonotonicInstant.now()
            guard connected else {
                if socketEvents & Int16(POLLHUP | POLLERR) != 0 {
                    hangups += 1
                    if hangups >= 3 {
                        return .failed("the connection closed before the broker accepted it" + socketError(socket)
                                       + (callbacks.lastError.map { " (\($0))" } ?? "") + certificateHint(), upSeconds: nil)
                    }
                }
                if now >= connectDeadline {
                    return .failed("no answer (CONNACK) within \(connectTimeoutSeconds) s", upSeconds: nil)
                }
                continue
            }

            do {
                try pump(client)
                try sharePassback(client)
                if case .running = phase { try publishState(client, force: flags.nudge) }
            } catch {
                return .failed(error.description, upSeconds: up())
            }

            // A clean stop: send what is pending, then `offline`, then DISCONNECT, all by the deadline.
            if flags.stopping {
                switch phase {
                case .running:
                    let remaining = max(0, flags.deadline.milliseconds(since: now))
                    phase = .draining(until: now.adding(milliseconds: remaining - min(500, remaining / 4)))
                case .draining(let until):
                    let drained = flags.writerDone && inflight.isEmpty && spoolExhausted && passbackInFlight.isEmpty
                        && (context.dependencies.site?.counts.waiting ?? 0) == 0
                    if drained || now >= until {
                        if !drained {
                            logger.warning("mqtt: stopping with \(context.spool?.depth.records ?? 0) events not yet acknowledged; "
                                           + "they stay in the spool for the next start")
                        }
                        do {
                            let mid = try client.publish(topic: configuration.topics.status, payload: Array("offline".utf8), qos: 1, retain: true)
                            phase = .offline(mid: mid, until: flags.deadline.adding(milliseconds: -50))
                        } catch {
                            return .stopped
                        }
                    }
                case .offline(_, let until):
                    if now >= until {
                        _ = try? client.disconnect()
                        phase = .disconnecting
                    }
                case .disconnecting:
                    break
                }
                if case .offline(let mid, _) = phase, mid == -1 {
                    _ = try? client.disconnect()
                    phase = .disconnecting
                }
            }
        }
    }

    /// The text of a failed call: TLS failures say so, with OpenSSL's reason; when the broker ended the
    /// handshake and our client certificate is out of its dates, that is said too.
    private func describe(_ error: MQTTError, connected: Bool) -> String {
        if error.isTLS {
            return "TLS with \(subject) failed: \(error.detail ?? MQTTError.text(code: error.code, errno: error.errno))" + certificateHint()
        }
        let handshake = !connected && configuration.settings.tlsEnabled
            && (error.errno?.rawValue == EPROTO || error.code == MOSQ_ERR_CONN_LOST.rawValue || error.code == MOSQ_ERR_PROTOCOL.rawValue)
        if handshake {
            return "TLS with \(subject) failed: the broker ended the handshake (\(error.description))" + certificateHint()
        }
        return error.description + Self.sandboxHint(error.errno)
    }

    /// The shipped unit has no network (PrivateNetwork=yes, RestrictAddressFamilies=AF_UNIX, IPAddressDeny=any):
    /// a socket refused outright, or a network namespace with nothing but `lo`, points at it, not at the broker.
    static func sandboxHint(_ errno: Errno?, interfaces: () -> [String] = networkInterfaces) -> String {
        guard let code = errno?.rawValue else { return "" }
        let sandbox = " (the service's sandbox allows no network: install the drop-in "
            + "/usr/share/scangate/mqtt-network.conf as /etc/systemd/system/scangate.service.d/mqtt-network.conf, see README)"
        switch code {
        case EAFNOSUPPORT, EPERM, EACCES: return sandbox
        case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH:
            let names = interfaces()
            return !names.isEmpty && names.allSatisfy({ $0 == "lo" }) ? sandbox : ""
        default: return ""
        }
    }

    static func networkInterfaces() -> [String] {
        (try? Directory.entries("/sys/class/net")) ?? []
    }

    /// "; the client certificate mqtt-tls-cert /etc/... (CN=kiosk-1) expired on ... (the broker refuses it)", or "".
    private func certificateHint() -> String {
        let s = configuration.settings
        guard s.tlsEnabled, !s.tlsCert.isEmpty, let problem = CertificateValidity.diagnose(s.tlsCert) else { return "" }
        return "; " + problem + " (the broker refuses it)"
    }

    /// " (Session taken over (reason 142))" for an MQTT v5 DISCONNECT reason from the broker, else "".
    private func disconnectReason(_ code: Int32?) -> String {
        guard let code, code >= 0x80, code <= 0xFF else { return "" }
        return " (" + MosquittoClient.reasonText(code) + ")"
    }

    private func socketError(_ socket: Int32) -> String {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error != 0 else { return "" }
        return ": " + Errno(rawValue: error).description
    }

    /// CONNACK accepted: `online`, discovery, the command subscription, the state; then the spool from its head.
    private func announce(_ client: MosquittoClient) throws(MQTTError) {
        let topics = configuration.topics
        _ = try publishOther(client, topic: topics.status, payload: Array("online".utf8), retain: true)
        if configuration.settings.homeAssistant {
            for m in HomeAssistantDiscovery.messages(clientID: configuration.clientID, topics: topics,
                                                     version: context.dependencies.state().version) {
                _ = try publishOther(client, topic: m.topic, payload: Array(m.payload.utf8), retain: true)
            }
        }
        if configuration.settings.commands {
            // Retain As Published: a command published with retain while we are subscribed keeps its flag
            // and is refused like one waiting in the broker (which still comes at subscribe, to be refused
            // with a result the back end sees).
            subscriptions[try client.subscribe(topics.commandFilter, qos: 1, options: MosquittoClient.retainAsPublished)] = topics.commandFilter
        }
        if let site = context.dependencies.site {
            var filters: [String] = []
            if configuration.settings.policy { filters += [topics.policy] + (topics.sitePolicy.map { [$0] } ?? []) }
            for filter in filters { subscriptions[try client.subscribe(filter, qos: 1)] = filter }
            if let passback = topics.passback {
                // No Local: this kiosk's own uses do not come back to it.
                subscriptions[try client.subscribe(passback, qos: 1, options: MosquittoClient.noLocal)] = passback
            }
            site.setConnected(true)
        }
        let pending = context.spool?.depth.records ?? 0
        let detail = "connected to \(subject) as \(configuration.clientID)"
        setLink(connected: true, detail: detail, error: nil, retryIn: nil)
        logger.notice("mqtt: \(detail) (topics under \(topics.prefix))"
                      + (failedAttempts > 0 ? " after \(failedAttempts) failed attempts" : "")
                      + (pending > 0 ? "; sending \(pending) spooled events" : ""))
        failedAttempts = 0
        lastStateKey = ""
        try publishState(client, force: true)
    }

    // MARK: - Events

    /// Publishes durable records from the cursor while fewer than `window` are in flight. A record larger
    /// than the broker's Maximum Packet Size can never be sent: it is refused here for good.
    private func pump(_ client: MosquittoClient) throws(MQTTError) {
        guard let spool = context.spool else {
            spoolExhausted = true
            return
        }
        while inflight.count < MQTTSession.window {
            let records = spool.read(from: cursor, maxCount: MQTTSession.window - inflight.count)
            if records.isEmpty {
                spoolExhausted = true
                return
            }
            for r in records {
                do {
                    let mid = try client.publish(topic: configuration.topics.event, payload: r.payload, qos: 1, retain: false)
                    inflight.append(InFlight(mid: mid, record: r.number, next: r.next, acked: false, refused: false))
                } catch where error.isOversize {
                    logger.error("mqtt: an event of \(r.payload.count) bytes (record \(r.number)) is larger than \(subject)'s maximum "
                                 + "packet size: it cannot be sent and is dropped from the spool (counted as refused)",
                                 rateLimitKey: "mqtt-event-oversize")
                    inflight.append(InFlight(mid: -1, record: r.number, next: r.next, acked: true, refused: true))
                }
                cursor = r.next
            }
            releaseAcknowledged()
        }
        spoolExhausted = false
    }

    /// A PUBACK: the acknowledged prefix of what is in flight leaves the spool.
    ///
    /// An event the broker refused (reason 0x80 or more) stays in the spool and the returned text ends
    /// the connection; after the backoff it is sent again from the spool's head. A lasting refusal (not
    /// authorised 0x87, topic name invalid 0x90, packet too large 0x95, payload format invalid 0x99,
    /// unspecified 0x80, implementation specific 0x83) counts against the record: at the
    /// `maxRefusals`th it is dropped instead (counted as refused, logged) and the connection goes on, so
    /// the events behind it drain. Quota exceeded (0x97) and packet id in use (0x91) pass and never count.
    private func acknowledge(_ mid: Int32, reason: Int32, phase: inout StopPhase) -> String? {
        if let use = passbackInFlight.removeValue(forKey: mid), reason >= 0x80 {
            logger.error("mqtt: the broker refused an anti-passback use on \(configuration.topics.passback ?? "") "
                         + "(number \(Logger.escape(bytes: use.number))): \(MosquittoClient.reasonText(reason)); check its ACL",
                         rateLimitKey: "mqtt-passback-refused")
        }
        if let topic = otherMids.removeValue(forKey: mid) {
            if reason >= 0x80 {
                logger.error("mqtt: the broker refused the message on \(topic): \(MosquittoClient.reasonText(reason)); check its ACL",
                             rateLimitKey: "mqtt-refused-\(topic)")
            }
        }
        if case .offline(let offlineMid, let until) = phase, offlineMid == mid {
            phase = .offline(mid: -1, until: until)
            return nil
        }
        guard let i = inflight.firstIndex(where: { $0.mid == mid && !$0.acked }) else { return nil }
        if reason >= 0x80 {
            let record = inflight[i].record
            let passing = reason == 0x97 || reason == 0x91
            let count = passing ? 0 : (refusals[record] ?? 0) + 1
            if !passing { refusals[record] = count }
            if count >= MQTTSession.maxRefusals {
                logger.error("mqtt: the broker refused an event on \(configuration.topics.event) (record \(record)) "
                             + "\(count) times: \(MosquittoClient.reasonText(reason)); it is dropped from the spool "
                             + "(counted as refused) so the events behind it can go; check the broker's ACL",
                             rateLimitKey: "mqtt-event-dropped")
                inflight[i].acked = true
                inflight[i].refused = true
                refusals.removeValue(forKey: record)
                releaseAcknowledged()
                return nil
            }
            let text = "the broker refused an event on \(configuration.topics.event): \(MosquittoClient.reasonText(reason)); "
                + "it stays in the spool (\(context.spool?.depth.records ?? 0) events) and is sent again after the backoff"
                + (passing ? "" : " (refusal \(count) of \(MQTTSession.maxRefusals))") + "; check the broker's ACL"
            logger.error("mqtt: " + text, rateLimitKey: "mqtt-event-refused")
            return text
        }
        inflight[i].acked = true
        releaseAcknowledged()
        return nil
    }

    /// The acknowledged (or refused) prefix of what is in flight leaves the spool.
    private func releaseAcknowledged() {
        var count = 0
        var refused = 0
        var last: SpoolPosition?
        while let first = inflight.first, first.acked {
            last = first.next
            if first.refused { refused += 1 }
            inflight.removeFirst()
            count += 1
        }
        guard let last else { return }
        context.spool?.acknowledge(upTo: last, refused: UInt64(refused))
        let delivered = count - refused
        if refusals.count > 1024, let head = context.spool?.head.record { refusals = refusals.filter { $0.key >= head } }
        guard delivered > 0 else { return }
        context.state.withLock { $0.acknowledged += UInt64(delivered) }
        context.dependencies.onAcknowledged?(delivered)
    }

    /// Message ids of QoS 1 publishes other than events (status, state, results, discovery), with their topic.
    var otherMids: [Int32: String] = [:]

    /// Publishes a message that is not an event; one too large for the broker (its Maximum Packet Size)
    /// is skipped with a log line (nil), the connection goes on.
    private func publishOther(_ client: MosquittoClient, topic: String, payload: [UInt8], retain: Bool) throws(MQTTError) -> Int32? {
        let mid: Int32
        do {
            mid = try client.publish(topic: topic, payload: payload, qos: 1, retain: retain)
        } catch where error.isOversize {
            logger.error("mqtt: the message on \(topic) (\(payload.count) bytes) is larger than \(subject)'s maximum packet size; "
                         + "skipped", rateLimitKey: "mqtt-oversize-\(topic)")
            return nil
        }
        if otherMids.count > 1024 { otherMids.removeAll() }
        otherMids[mid] = topic
        return mid
    }

    // MARK: - State

    private func publishState(_ client: MosquittoClient, force: Bool) throws(MQTTError) {
        let now = MonotonicInstant.now()
        guard force || now >= nextState || now >= nextStateCheck else { return }
        nextStateCheck = now.adding(milliseconds: 2000)
        let state = context.dependencies.state()
        let key = state.changeKey
        guard force || now >= nextState || key != lastStateKey else { return }
        let payload = MQTTJSON.state(state, kiosk: configuration.clientID, link: context.linkStatus(),
                                      wallTimeNanoseconds: WallClock.nowNanoseconds())
        // Skipped when too large for the broker; the next change or interval tries again.
        _ = try publishOther(client, topic: configuration.topics.state, payload: Array(payload.utf8), retain: true)
        lastStateKey = key
        nextState = now.adding(milliseconds: Double(configuration.settings.stateIntervalSeconds) * 1000)
    }

    // MARK: - Commands

    /// Filters subscribed on this connection, by message id (for the log line when one is refused).
    var subscriptions: [Int32: String] = [:]

    static func loss(of filter: String, _ topics: MQTTTopics) -> String {
        if filter == topics.commandFilter { return "commands" }
        if filter == topics.passback { return "other kiosks' anti-passback uses" }
        return "site policy documents"
    }

    /// A message on one of our subscriptions: a command, a site policy document, another kiosk's use.
    private func route(_ message: MosquittoCallbacks.Message, client: MosquittoClient) throws(MQTTError) {
        let topics = configuration.topics
        if let site = context.dependencies.site {
            if topics.passbackNumber(ofTopic: message.topic) != nil {
                receivePassback(message, site: site)
                return
            }
            if configuration.settings.policy,
               message.topic.bytesEqual(topics.policy) || (topics.sitePolicy.map { message.topic.bytesEqual($0) } ?? false) {
                try receivePolicy(message, site: site, client: client)
                return
            }
        }
        try command(message, client: client)
    }

    private func command(_ message: MosquittoCallbacks.Message, client: MosquittoClient) throws(MQTTError) {
        guard let name = configuration.topics.commandName(ofTopic: message.topic) else { return }
        if message.retained && message.payload.isEmpty && !message.truncated {
            // Clearing a retained command (an empty retained message): nothing to act on or answer.
            logger.info("mqtt: the retained message on \(Logger.escape(message.topic)) was cleared")
            return
        }
        let wall = context.clock.wall()
        let nowSeconds = wall / 1_000_000_000
        var result: MQTTCommandResult
        if message.retained {
            result = MQTTCommandResult(id: nil, command: name, outcome: .refused(
                "a retained command is refused: the broker would deliver it again on every connection (publish commands without retain)"))
        } else if message.truncated || message.payload.count > MQTTCommandParser.maxPayload {
            result = MQTTCommandResult(id: nil, command: name, outcome: .refused("the payload is longer than \(MQTTCommandParser.maxPayload) bytes"))
        } else {
            switch MQTTCommandParser.parse(name: name, payload: message.payload, nowSeconds: nowSeconds) {
            case .failure(let refusal):
                result = MQTTCommandResult(id: refusal.id, command: name, outcome: .refused(refusal.reason))
            case .success(let c):
                // The id is on disk before the command is acted on, so a restart does not forget it.
                let admitted: Result<(CommandReplayGuard.Admission, CommandIDStore), SpoolError> = context.commandIDs().flatMap { store in
                    store.admit(c.id, expires: c.expires).map { ($0, store) }
                }
                switch admitted {
                case .failure(let error):
                    result = MQTTCommandResult(id: c.id, command: name, outcome: .refused(
                        "the id cannot be recorded as acted on (\(error)); not acted on, send it again later"))
                case .success((.repeated, _)):
                    result = MQTTCommandResult(id: c.id, command: name, outcome: .refused(
                        "the id \(JSONText.string(c.id)) was already acted on; a command is acted on once (send a new id)"))
                case .success((.full, let store)):
                    result = MQTTCommandResult(id: c.id, command: name, outcome: .refused(
                        "too many commands within their expiry (\(store.capacity)); try again later"))
                case .success((.new, _)):
                    result = MQTTCommandResult(id: c.id, command: name, outcome: act(c))
                }
            }
        }
        let idText = result.id.map { Logger.escape($0) } ?? "(none)"
        switch result.outcome {
        case .ok(let d): logger.info("mqtt: command \(name) id \(idText): \(d)")
        case .refused(let d): logger.warning("mqtt: command \(Logger.escape(name)) id \(idText) refused: \(d)", rateLimitKey: "mqtt-command-refused")
        case .failed(let d): logger.warning("mqtt: command \(name) id \(idText) failed: \(d)")
        }
        // Results go only to topics made of plain characters (a hostile name is logged, not echoed).
        guard name.utf8.count <= 32, name.utf8.allSatisfy(MQTTSettings.isIDByte) else { return }
        let text = result.json(kiosk: configuration.clientID, wallTimeNanoseconds: WallClock.nowNanoseconds())
        _ = try publishOther(client, topic: configuration.topics.commandResult(name), payload: Array(text.utf8), retain: false)
    }

    private func act(_ command: MQTTCommand) -> MQTTCommandResult.Outcome {
        switch command.action {
        case .daemon(let c):
            guard let handler = context.dependencies.commands else {
                return .failed("this daemon does not take \(c.rawValue) commands")
            }
            switch handler.perform(c) {
            case .done(let detail): return .ok(detail)
            case .failed(let reason): return .failed(reason)
            }
        case .feedback(let request):
            guard let sink = context.dependencies.feedback else { return .failed("no feedback device (LEDs, buzzer, beep) is configured") }
            sink.play(request, origin: "mqtt")
            switch request {
            case .grant: return .ok("played grant")
            case .deny: return .ok("played deny")
            case .readCue: return .ok("played the read cue")
            case .command: return .ok(command.name == .beep ? "beeped" : "played the LED/tone command")
            }
        }
    }

    // MARK: - The site: policy documents and anti-passback uses

    /// The connection ended: the site sees this kiosk as offline, and its uses not yet acknowledged are
    /// sent again on the next connection.
    private func leaveSite() {
        guard let site = context.dependencies.site else { return }
        site.setConnected(false)
        site.requeue(passbackInFlight.sorted { $0.key < $1.key }.map(\.value))
        passbackInFlight = [:]
    }

    /// Publishes this kiosk's own uses waiting in the site link (QoS 1, not retained).
    private func sharePassback(_ client: MosquittoClient) throws(MQTTError) {
        guard let site = context.dependencies.site, configuration.topics.passback != nil else { return }
        while passbackInFlight.count < MQTTSession.window {
            let uses = site.pendingUses(max: MQTTSession.window - passbackInFlight.count)
            if uses.isEmpty { return }
            var handed = 0
            defer { site.published(handed) }
            for var use in uses {
                use.kiosk = configuration.clientID
                guard let topic = configuration.topics.passback(number: use.number) else { break }
                do {
                    // Retained, so a kiosk that connects later (or again) learns the last use of each number;
                    // it expires with the use's timeout.
                    let payload = Array(SiteLink.message(use).utf8)
                    let mid = use.keepSeconds > 0
                        ? try client.publish(topic: topic, payload: payload, qos: 1, retain: true,
                                             expirySeconds: UInt32(clamping: use.keepSeconds))
                        : try client.publish(topic: topic, payload: payload, qos: 1, retain: true)
                    passbackInFlight[mid] = use
                } catch where error.isOversize {
                    logger.error("mqtt: an anti-passback use is larger than \(subject)'s maximum packet size; not shared",
                                 rateLimitKey: "mqtt-passback-oversize")
                }
                handed += 1
            }
        }
    }

    /// Another kiosk's use: parsed (it is untrusted), then given to the anti-passback store in force.
    private func receivePassback(_ message: MosquittoCallbacks.Message, site: SiteLink) {
        if message.payload.isEmpty && !message.truncated { return } // a retained use cleared
        guard !message.truncated else {
            logger.warning("mqtt: a message on \(Logger.escape(message.topic)) is longer than \(SiteLink.maxMessageBytes) bytes; ignored",
                           rateLimitKey: "mqtt-passback-bad")
            return
        }
        switch SiteLink.parse(message.payload) {
        case .failure(let error):
            logger.warning("mqtt: an anti-passback message on \(Logger.escape(message.topic)) is ignored: \(error.text)",
                           rateLimitKey: "mqtt-passback-bad")
        case .success(let use):
            guard !use.kiosk.bytesEqual(configuration.clientID) else { return }
            guard let named = configuration.topics.passbackNumber(ofTopic: message.topic), named == use.number else {
                logger.warning("mqtt: an anti-passback message on \(Logger.escape(message.topic)) names another number than its topic; ignored",
                               rateLimitKey: "mqtt-passback-bad")
                return
            }
            if site.receive(use) {
                logger.info("mqtt: anti-passback: number \(Logger.escape(bytes: use.number)) \(use.entry ? "entered" : "exited") "
                            + "at kiosk \(Logger.escape(use.kiosk)) (door \(Logger.escape(use.door)))")
            }
        }
    }

    /// A site policy document: handed to the daemon, which verifies it as it does policy-file; the
    /// answer goes to `<prefix>/policy/result`. An empty retained message (the topic cleared) is ignored.
    private func receivePolicy(_ message: MosquittoCallbacks.Message, site: SiteLink, client: MosquittoClient) throws(MQTTError) {
        if message.payload.isEmpty && !message.truncated {
            logger.info("mqtt: \(Logger.escape(message.topic)) is empty (cleared); the site policy in force stays")
            return
        }
        let outcome: SiteLink.PolicyOutcome
        if message.truncated {
            outcome = .refused("the document is longer than \(MQTTSession.maxPolicyBytes) bytes")
        } else {
            outcome = site.deliverPolicy(message.payload, from: message.topic)
                ?? .refused("this daemon takes no site policy over MQTT")
        }
        let (name, detail): (String, String)
        switch outcome {
        case .installed(let d): (name, detail) = ("installed", d)
        case .unchanged(let d): (name, detail) = ("unchanged", d)
        case .refused(let d): (name, detail) = ("refused", d)
        }
        let line = "mqtt: site policy from \(Logger.escape(message.topic)): \(name): \(Logger.escape(detail))"
        if case .refused = outcome { logger.error(line, rateLimitKey: "mqtt-policy-refused") } else { logger.notice(line) }
        let payload = "{\"topic\":" + JSONText.string(message.topic) + ",\"outcome\":\"" + name + "\",\"detail\":"
            + JSONText.string(detail) + ",\"at\":" + String(context.clock.wall() / 1_000_000_000) + "}"
        _ = try publishOther(client, topic: configuration.topics.policyResult, payload: Array(payload.utf8), retain: false)
    }
}

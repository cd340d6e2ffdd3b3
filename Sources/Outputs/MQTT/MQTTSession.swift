import CMosquitto
import Core
import Platform
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// The session thread: one persistent broker session at a time, reconnected with backoff.
///
/// Its own loop, not mosquitto_loop_start: libmosquitto's "exponential" reconnect delay is
/// delay*(n+1)^2 (1, 4, 9, ... s), not the doubling asked for, and its thread cannot also wait on the
/// spool. Here one thread polls the broker socket and a wake-up pipe, calls mosquitto_loop(…, 0, 1) for
/// each wake-up (reads, writes, the TLS handshake, keepalive pings) and between calls publishes from
/// the spool, so every libmosquitto call happens on this thread and no callback calls back into it.
/// Each connection attempt has a new handle (mosquitto_new … mosquitto_destroy): with clean sessions
/// and nothing carried over in libmosquitto's memory, the spool alone decides what is sent again.
final class MQTTSession {
    let context: MQTTSessionContext
    let configuration: MQTTConfiguration
    var logger: Logger { context.logger }
    var replayGuard = CommandReplayGuard()
    var failedAttempts = 0

    /// Events published and not yet acknowledged, in publish (= spool) order.
    struct InFlight {
        let mid: Int32
        let next: SpoolPosition
        var acked: Bool
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

    init(context: MQTTSessionContext) {
        self.context = context
        self.configuration = context.configuration
    }

    enum End {
        case stopped
        case crashed
        case failed(String, wasConnected: Bool)
    }

    var subject: String { "broker \(configuration.host):\(configuration.port)" }

    func run() {
        var backoff = MQTTSession.firstBackoffSeconds
        loop: while true {
            if context.state.withLock({ $0.stopping }) { break }
            switch connection() {
            case .stopped, .crashed:
                break loop
            case .failed(let message, let wasConnected):
                if wasConnected { backoff = MQTTSession.firstBackoffSeconds }
                failedAttempts += 1
                let stopping = context.state.withLock { $0.stopping }
                setLink(connected: false, detail: "not connected: \(message)"
                        + (stopping ? "" : "; next attempt in \(Int(backoff)) s"), error: message)
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
        setLink(connected: false, detail: "stopped", error: nil)
        context.threadFinished()
    }

    /// Waits `seconds`, or until a stop; false when stopping.
    private func waitBackoff(seconds: Double) -> Bool {
        let until = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
        while true {
            if context.state.withLock({ $0.stopping }) { return false }
            let now = MonotonicInstant.now()
            if now >= until { return true }
            context.wake.wait(milliseconds: Int32(min(until.milliseconds(since: now) + 1, 1000)))
        }
    }

    private func setLink(connected: Bool, detail: String, error: String?) {
        let changed: Bool = context.state.withLock { s in
            let changed = s.connected != connected
            s.connected = connected
            s.detail = detail
            if let error {
                s.lastError = error
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
            return changed
        }
        if changed { context.dependencies.link?.controllerLink("mqtt", online: connected, detail: detail) }
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
            try client.connectAsync(host: configuration.host, port: configuration.port, keepalive: configuration.settings.keepaliveSeconds)
        } catch {
            return .failed(describe(error, connected: false), wasConnected: false)
        }
        let callbacks = client.callbacks
        let connectTimeoutSeconds = max(10, configuration.settings.keepaliveSeconds)
        let connectDeadline = MonotonicInstant.now().adding(milliseconds: Double(connectTimeoutSeconds) * 1000)
        var connected = false
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
                shutdown(socket, Int32(SHUT_RDWR))
            }
            guard socket >= 0 else {
                return .failed(callbacks.lastError ?? "the connection closed", wasConnected: connected)
            }

            var timeout: Double = connected ? 1000 : min(1000, max(0, connectDeadline.milliseconds(since: .now())))
            if flags.stopping { timeout = min(timeout, 20) }
            var fds = [
                pollfd(fd: socket, events: Int16(POLLIN) | (client.wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: context.wake.readFD, events: Int16(POLLIN), revents: 0),
            ]
            _ = retryOnInterrupt { poll(&fds, 2, Int32(timeout)) }
            if fds[1].revents != 0 { context.wake.drain() }
            let socketEvents = fds[0].revents

            let rc = client.loop()
            let errnoAfterLoop = Errno.current

            if let code = callbacks.connack {
                callbacks.connack = nil
                guard code == 0 else {
                    return .failed("the broker refused the connection: \(MosquittoClient.reasonText(code))", wasConnected: false)
                }
                connected = true
                do {
                    try announce(client)
                } catch {
                    return .failed(error.description, wasConnected: true)
                }
            }
            let answers = callbacks.acknowledged
            callbacks.acknowledged.removeAll(keepingCapacity: true)
            for answer in answers {
                if let refusal = acknowledge(answer.mid, reason: answer.reason, phase: &phase) {
                    return .failed(refusal, wasConnected: true)
                }
            }
            for sub in callbacks.subscribed where sub.granted >= 0x80 {
                logger.error("mqtt: the broker refused the subscription to \(configuration.topics.commandFilter) "
                             + "(\(MosquittoClient.reasonText(sub.granted))): commands will not arrive; check the broker's ACL",
                             rateLimitKey: "mqtt-subscribe")
            }
            callbacks.subscribed.removeAll()
            let messages = callbacks.messages
            callbacks.messages.removeAll(keepingCapacity: true)
            for message in messages where connected {
                do {
                    try command(message, client: client)
                } catch {
                    return .failed(error.description, wasConnected: true)
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
                let error = MQTTError("connection to", subject, code: rc, errno: rc == MOSQ_ERR_ERRNO.rawValue ? errnoAfterLoop : nil,
                                      detail: callbacks.lastError)
                return .failed(describe(error, connected: connected), wasConnected: connected)
            }
            if callbacks.disconnected != nil {
                return .failed("the broker closed the connection" + (callbacks.lastError.map { " (\($0))" } ?? "")
                               + (connected ? "" : certificateHint()), wasConnected: connected)
            }

            let now = MonotonicInstant.now()
            guard connected else {
                if socketEvents & Int16(POLLHUP | POLLERR) != 0 {
                    hangups += 1
                    if hangups >= 3 {
                        return .failed("the connection closed before the broker accepted it" + socketError(socket)
                                       + (callbacks.lastError.map { " (\($0))" } ?? "") + certificateHint(), wasConnected: false)
                    }
                }
                if now >= connectDeadline {
                    return .failed("no answer (CONNACK) within \(connectTimeoutSeconds) s", wasConnected: false)
                }
                continue
            }

            do {
                try pump(client)
                if case .running = phase { try publishState(client, force: flags.nudge) }
            } catch {
                return .failed(error.description, wasConnected: true)
            }

            // A clean stop: send what is pending, then `offline`, then DISCONNECT, all by the deadline.
            if flags.stopping {
                switch phase {
                case .running:
                    let remaining = max(0, flags.deadline.milliseconds(since: now))
                    phase = .draining(until: now.adding(milliseconds: remaining - min(500, remaining / 4)))
                case .draining(let until):
                    let drained = flags.writerDone && inflight.isEmpty && spoolExhausted
                    if drained || now >= until {
                        if !drained {
                            logger.warning("mqtt: stopping with \(context.spool.depth.records) events not yet acknowledged; "
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
        if configuration.settings.commands { _ = try client.subscribe(topics.commandFilter, qos: 1) }
        let pending = context.spool.depth.records
        let detail = "connected to \(subject) as \(configuration.clientID)"
        setLink(connected: true, detail: detail, error: nil)
        logger.notice("mqtt: \(detail) (topics under \(topics.prefix))"
                      + (failedAttempts > 0 ? " after \(failedAttempts) failed attempts" : "")
                      + (pending > 0 ? "; sending \(pending) spooled events" : ""))
        failedAttempts = 0
        lastStateKey = ""
        try publishState(client, force: true)
    }

    // MARK: - Events

    /// Publishes durable records from the cursor while fewer than `window` are in flight.
    private func pump(_ client: MosquittoClient) throws(MQTTError) {
        while inflight.count < MQTTSession.window {
            let records = context.spool.read(from: cursor, maxCount: MQTTSession.window - inflight.count)
            if records.isEmpty {
                spoolExhausted = true
                return
            }
            for r in records {
                let mid = try client.publish(topic: configuration.topics.event, payload: r.payload, qos: 1, retain: false)
                inflight.append(InFlight(mid: mid, next: r.next, acked: false))
                cursor = r.next
            }
        }
        spoolExhausted = false
    }

    /// A PUBACK: the acknowledged prefix of what is in flight leaves the spool. An event the broker
    /// refused (reason 0x80 or more: not authorised, quota exceeded) stays in the spool: the text returned
    /// ends the connection, and after the backoff it is sent again from the spool's head.
    private func acknowledge(_ mid: Int32, reason: Int32, phase: inout StopPhase) -> String? {
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
        guard let i = inflight.firstIndex(where: { $0.mid == mid }) else { return nil }
        if reason >= 0x80 {
            let text = "the broker refused an event on \(configuration.topics.event): \(MosquittoClient.reasonText(reason)); "
                + "it stays in the spool (\(context.spool.depth.records) events) and is sent again after the backoff; check the broker's ACL"
            logger.error("mqtt: " + text, rateLimitKey: "mqtt-event-refused")
            return text
        }
        inflight[i].acked = true
        var count = 0
        var last: SpoolPosition?
        while let first = inflight.first, first.acked {
            last = first.next
            inflight.removeFirst()
            count += 1
        }
        guard let last else { return nil }
        context.spool.acknowledge(upTo: last)
        context.state.withLock { $0.acknowledged += UInt64(count) }
        context.dependencies.onAcknowledged?(count)
        return nil
    }

    /// Message ids of QoS 1 publishes other than events (status, state, results, discovery), with their topic.
    var otherMids: [Int32: String] = [:]

    private func publishOther(_ client: MosquittoClient, topic: String, payload: [UInt8], retain: Bool) throws(MQTTError) -> Int32 {
        let mid = try client.publish(topic: topic, payload: payload, qos: 1, retain: retain)
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
        let payload = FleetJSON.state(state, kiosk: configuration.clientID, link: context.linkStatus(),
                                      wallTimeNanoseconds: WallClock.nowNanoseconds())
        _ = try publishOther(client, topic: configuration.topics.state, payload: Array(payload.utf8), retain: true)
        lastStateKey = key
        nextState = now.adding(milliseconds: Double(configuration.settings.stateIntervalSeconds) * 1000)
    }

    // MARK: - Commands

    private func command(_ message: MosquittoCallbacks.Message, client: MosquittoClient) throws(MQTTError) {
        guard let name = configuration.topics.commandName(ofTopic: message.topic) else { return }
        let wall = WallClock.nowNanoseconds()
        let nowSeconds = wall / 1_000_000_000
        var result: MQTTCommandResult
        if message.retained {
            result = MQTTCommandResult(id: nil, command: name, outcome: .refused(
                "a retained command is refused: the broker would deliver it again on every connection (publish commands without retain)"))
        } else if message.truncated {
            result = MQTTCommandResult(id: nil, command: name, outcome: .refused("the payload is longer than \(MQTTCommandParser.maxPayload) bytes"))
        } else {
            switch MQTTCommandParser.parse(name: name, payload: message.payload, nowSeconds: nowSeconds) {
            case .failure(let refusal):
                result = MQTTCommandResult(id: refusal.id, command: name, outcome: .refused(refusal.reason))
            case .success(let c):
                switch replayGuard.admit(c.id, expires: c.expires, now: nowSeconds, monotonic: .now()) {
                case .repeated:
                    result = MQTTCommandResult(id: c.id, command: name, outcome: .refused(
                        "the id \(JSONText.string(c.id)) was already acted on; a command is acted on once (send a new id)"))
                case .full:
                    result = MQTTCommandResult(id: c.id, command: name, outcome: .refused(
                        "too many commands within their expiry (\(replayGuard.capacity)); try again later"))
                case .new:
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
}

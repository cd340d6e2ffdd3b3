import CMosquitto
import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// One connection attempt for `scangate doctor`: resolves, connects (TLS and credentials as configured),
/// waits for CONNACK, disconnects. Publishes nothing and sets no will. It connects as
/// `<client-id>-doctor`; a broker that forces the client id to the certificate's CN
/// (use_username_as_clientid) takes the running daemon's session over for a moment, and the daemon
/// reconnects after its backoff.
public enum MQTTProbe {
    public enum Outcome: Equatable, Sendable {
        /// "connected to broker h:p as k1-doctor (MQTT v5, TLS)".
        case connected(String)
        case failed(String)
    }

    public static func check(_ configuration: MQTTConfiguration, library: MosquittoLibrary, timeoutSeconds: Double = 10) -> Outcome {
        let subject = "broker \(configuration.host):\(configuration.port)"
        let id = configuration.clientID + "-doctor"
        let client: MosquittoClient
        do {
            client = try MQTTSession.makeClient(configuration, library: library, clientID: id, will: false)
            try client.connectAsync(host: configuration.host, port: configuration.port, keepalive: configuration.settings.keepaliveSeconds,
                                    maximumPacketSize: MQTTSession.maximumPacketSize)
        } catch {
            return .failed(hint(error.description, configuration))
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: timeoutSeconds * 1000)
        while MonotonicInstant.now() < deadline {
            let socket = client.socket
            guard socket >= 0 else { return .failed(hint(client.callbacks.lastError ?? "the connection closed", configuration)) }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN) | (client.wantsWrite ? Int16(POLLOUT) : 0), revents: 0)]
            _ = retryOnInterrupt { poll(&fds, 1, 200) }
            let rc = client.loop()
            if let code = client.callbacks.connack {
                _ = try? client.disconnect()
                _ = client.loop()
                guard code == 0 else { return .failed("the broker refused the connection: \(MosquittoClient.reasonText(code))") }
                return .connected("connected to \(subject) as \(id) (MQTT v5\(configuration.settings.tlsEnabled ? ", TLS" : ""))")
            }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                let error = MQTTError("connection to", subject, code: rc, errno: rc == MOSQ_ERR_ERRNO.rawValue ? .current : nil,
                                      detail: client.callbacks.lastError)
                return .failed(hint(error.description, configuration))
            }
        }
        return .failed("no answer (CONNACK) from \(subject) within \(Int(timeoutSeconds)) s")
    }

    static func hint(_ text: String, _ configuration: MQTTConfiguration) -> String {
        let s = configuration.settings
        guard s.tlsEnabled, !s.tlsCert.isEmpty, let problem = CertificateValidity.diagnose(s.tlsCert) else { return text }
        return text + "; " + problem
    }
}

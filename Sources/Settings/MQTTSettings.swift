import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// What the user chose for the fleet connection (the `[mqtt]` section). `host` empty: MQTT is off.
/// Plain values with their defaults written once; `validate()` checks them without touching files,
/// `resolve(hostName:)` (in the MQTT output) reads the password file and checks the key files when the
/// output is built.
public struct MQTTSettings: SettingsSection {
    /// `mqtt-host`: the broker's host name or address. Empty turns MQTT off.
    public var host = ""
    /// `mqtt-port`: nil means 1883, or 8883 when TLS is on (`mqtt-tls-ca` set).
    public var port: Int? = nil
    /// `mqtt-client-id`: empty means the host name. Also the `kiosk` field of every event.
    public var clientID = ""
    /// `mqtt-topic-prefix`: empty means `scangate/<client-id>`.
    public var topicPrefix = ""
    /// `mqtt-username`: empty sends no user name (a TLS client certificate may name the client instead).
    public var username = ""
    /// `mqtt-password-file`: a file holding the password (0600, owned by the service user). Never logged.
    public var passwordFile = ""
    /// `mqtt-tls-ca`: the CA file that signed the broker's certificate, or `system` for the system's
    /// CAs. Set: TLS is on and the broker's host name is checked against its certificate.
    public var tlsCA = ""
    /// `mqtt-tls-cert` and `mqtt-tls-key`: this kiosk's client certificate and key (both or neither).
    public var tlsCert = ""
    public var tlsKey = ""
    /// `mqtt-keepalive-s`: the MQTT keepalive; the broker drops the session (and publishes the will)
    /// after 1.5 times this without a packet.
    public var keepaliveSeconds = 30
    /// `mqtt-state-interval-s`: the retained state is published on change and at least this often.
    public var stateIntervalSeconds = 60
    /// `mqtt-commands`: subscribe to `<prefix>/cmd/+` and act on commands.
    public var commands = false
    /// `mqtt-spool`: the directory of the on-disk spool of events not yet acknowledged by the broker.
    public var spool = "/var/lib/scangate/mqtt-spool"
    /// `mqtt-spool-max-mb`: when the spool holds this much, the oldest events are dropped (counted, logged).
    public var spoolMaxMB = 64
    /// `mqtt-spool-max-age-h`: events spooled longer ago than this are dropped (counted, logged).
    public var spoolMaxAgeHours = 168
    /// `mqtt-homeassistant`: publish Home Assistant discovery config (a tag scanner, sensors, online).
    public var homeAssistant = false
    /// `mqtt-policy`: take signed site policy documents from `<prefix>/policy` (and `<site>/policy` with
    /// mqtt-site-topic), verified as policy-file is; the result goes to `<prefix>/policy/result`.
    public var policy = false
    /// `mqtt-site-topic`: the site's topics: `<site>/policy` (with mqtt-policy) and `<site>/passback`,
    /// where the kiosks of a site share anti-passback uses. Empty: none.
    public var siteTopic = ""

    public init() {}

    public var enabled: Bool { !host.isEmpty }
    public var tlsEnabled: Bool { !tlsCA.isEmpty }
    public var effectivePort: Int { port ?? (tlsEnabled ? 8883 : 1883) }

    /// Limits of the values (used by validate() and in its messages).
    public static let portRange = 1...65535
    public static let keepaliveRange = 5...3600
    public static let stateIntervalRange = 5...86_400
    public static let spoolMaxMBRange = 1...4096
    public static let spoolMaxAgeRange = 1...8760
    public static let maxClientIDLength = 64
    public static let maxTopicPrefixBytes = 160
    public static let maxUsernameBytes = 256

    /// Checks every option; each error names the option and what is allowed. Reads no file.
    public func validate() throws(UsageError) {
        guard enabled else { return }
        try Self.checkHost(host)
        if let port { try Self.check("mqtt-port", port, Self.portRange) }
        if !clientID.isEmpty { try Self.checkClientID(clientID, option: "mqtt-client-id") }
        if !topicPrefix.isEmpty { try Self.checkTopicPrefix(topicPrefix) }
        if !siteTopic.isEmpty { try Self.checkTopicPrefix(siteTopic, option: "mqtt-site-topic") }
        if username.utf8.count > Self.maxUsernameBytes || username.utf8.contains(0) {
            throw UsageError("mqtt-username: at most \(Self.maxUsernameBytes) bytes, no NUL")
        }
        if !passwordFile.isEmpty && username.isEmpty {
            throw UsageError("mqtt-password-file needs mqtt-username (MQTT sends a password only with a user name)")
        }
        for (option, path) in [("mqtt-password-file", passwordFile), ("mqtt-tls-cert", tlsCert),
                               ("mqtt-tls-key", tlsKey), ("mqtt-spool", spool)] where !path.isEmpty {
            try Self.checkPath(path, option: option)
        }
        if !tlsCA.isEmpty && tlsCA != "system" { try Self.checkPath(tlsCA, option: "mqtt-tls-ca") }
        if tlsCert.isEmpty != tlsKey.isEmpty {
            throw UsageError("mqtt-tls-cert and mqtt-tls-key go together: give both (a client certificate and its key) or neither")
        }
        if !tlsCert.isEmpty && tlsCA.isEmpty {
            throw UsageError("mqtt-tls-cert needs mqtt-tls-ca (the CA that signed the broker's certificate, or 'system')")
        }
        try Self.check("mqtt-keepalive-s", keepaliveSeconds, Self.keepaliveRange)
        try Self.check("mqtt-state-interval-s", stateIntervalSeconds, Self.stateIntervalRange)
        if spool.isEmpty {
            throw UsageError("mqtt-spool: a directory is needed (events not yet acknowledged by the broker are kept there)")
        }
        try Self.check("mqtt-spool-max-mb", spoolMaxMB, Self.spoolMaxMBRange)
        try Self.check("mqtt-spool-max-age-h", spoolMaxAgeHours, Self.spoolMaxAgeRange)
    }

    /// The client id: `mqtt-client-id`, or the host name.
    public func effectiveClientID(hostName: String) throws(UsageError) -> String {
        if !clientID.isEmpty { return clientID }
        do throws(UsageError) {
            try Self.checkClientID(hostName, option: "the host name")
        } catch {
            throw UsageError("mqtt-client-id: the default, the host name '\(Logger.escape(hostName))', is not a valid client id "
                             + "(\(error.message)); set mqtt-client-id")
        }
        return hostName
    }



    // MARK: - Checks

    public static func check(_ option: String, _ value: Int, _ range: ClosedRange<Int>) throws(UsageError) {
        guard range.contains(value) else {
            throw UsageError("\(option): \(value) is out of range; allowed \(range.lowerBound)-\(range.upperBound)")
        }
    }

    public static func checkHost(_ host: String) throws(UsageError) {
        let ok = host.utf8.count <= 253 && host.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: ":") || b == UInt8(ascii: "_")
        }
        guard ok else {
            throw UsageError("mqtt-host: '\(Logger.escape(host))' is not a host name or address (letters, digits, '-', '.', ':', '_'; at most 253)")
        }
    }

    /// A client id: 1-64 of A-Z a-z 0-9 '-' '_' '.'. No '/', '+', '#' (they would break the broker's
    /// ACL patterns on %c and the topics built from it), no NUL, no spaces.
    public static func checkClientID(_ id: String, option: String) throws(UsageError) {
        guard !id.isEmpty, id.utf8.count <= maxClientIDLength else {
            throw UsageError("\(option): 1 to \(maxClientIDLength) characters are allowed, not \(id.utf8.count)")
        }
        for b in id.utf8 where !isIDByte(b) {
            throw UsageError("\(option): '\(Logger.escape(id))' has a character that is not allowed "
                             + "(allowed: letters, digits, '-', '_', '.'; no '/', '+', '#', spaces or control characters)")
        }
    }

    public static func isIDByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
    }

    /// A topic prefix: levels separated by '/', none empty, no wildcard ('+', '#'), no NUL or control
    /// character, not starting with '$' (broker topics), at most 160 bytes.
    public static func checkTopicPrefix(_ prefix: String, option: String = "mqtt-topic-prefix") throws(UsageError) {
        let bytes = Array(prefix.utf8)
        guard !bytes.isEmpty, bytes.count <= maxTopicPrefixBytes else {
            throw UsageError("\(option): 1 to \(maxTopicPrefixBytes) bytes are allowed, not \(bytes.count)")
        }
        if let bad = bytes.first(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 < 0x20 || $0 == 0x7F }) {
            let what = bad == UInt8(ascii: "+") || bad == UInt8(ascii: "#") ? "the wildcard '\(Character(Unicode.Scalar(bad)))'" : "a control character"
            throw UsageError("\(option): '\(Logger.escape(prefix))' has \(what); a prefix names topics, so no '+', '#' or control characters")
        }
        if bytes.first == UInt8(ascii: "$") {
            throw UsageError("\(option): may not start with '$' (topics beginning with '$' belong to the broker)")
        }
        if prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            throw UsageError("\(option): '\(Logger.escape(prefix))' has an empty level (a leading, trailing or doubled '/')")
        }
    }

    public static func checkPath(_ path: String, option: String) throws(UsageError) {
        guard !path.utf8.contains(0), path.utf8.count < 4096 else {
            throw UsageError("\(option): a path without NUL and shorter than 4096 bytes is needed")
        }
    }
}

extension RunSettings {
    public var mqtt: MQTTSettings {
        get { self[MQTTSettings.self] }
        set { self[MQTTSettings.self] = newValue }
    }
}

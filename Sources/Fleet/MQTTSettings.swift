import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// What the user chose for the fleet connection (the `[mqtt]` section). `host` empty: MQTT is off.
/// Plain values with their defaults written once; `validate()` checks them without touching files,
/// `resolve(hostName:)` reads the password file and checks the key files when the output is built.
public struct MQTTSettings: Equatable, Sendable {
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

    /// Checks everything and reads what the session needs: the client id, the prefix, the password.
    /// `hostName` is the machine's host name (see `MQTTSettings.systemHostName()`).
    public func resolve(hostName: String) throws(UsageError) -> MQTTConfiguration {
        try validate()
        guard enabled else { throw UsageError("mqtt-host: empty, so MQTT is off") }
        let id = try effectiveClientID(hostName: hostName)
        let prefix = topicPrefix.isEmpty ? "scangate/" + id : topicPrefix
        try Self.checkTopicPrefix(prefix)
        var password: String?
        if !passwordFile.isEmpty { password = try SecretFile.readPassword(passwordFile, option: "mqtt-password-file") }
        if !tlsKey.isEmpty { try SecretFile.checkPrivate(tlsKey, option: "mqtt-tls-key") }
        for (option, path) in [("mqtt-tls-cert", tlsCert), ("mqtt-tls-ca", tlsCA == "system" ? "" : tlsCA)] where !path.isEmpty {
            try SecretFile.checkReadable(path, option: option)
        }
        return MQTTConfiguration(settings: self, clientID: id, topics: MQTTTopics(prefix: prefix), password: password)
    }

    /// gethostname(2), or "scangate" when it fails.
    public static func systemHostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "scangate" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Checks

    static func check(_ option: String, _ value: Int, _ range: ClosedRange<Int>) throws(UsageError) {
        guard range.contains(value) else {
            throw UsageError("\(option): \(value) is out of range; allowed \(range.lowerBound)-\(range.upperBound)")
        }
    }

    static func checkHost(_ host: String) throws(UsageError) {
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

    static func isIDByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
    }

    /// A topic prefix: levels separated by '/', none empty, no wildcard ('+', '#'), no NUL or control
    /// character, not starting with '$' (broker topics), at most 160 bytes.
    public static func checkTopicPrefix(_ prefix: String) throws(UsageError) {
        let bytes = Array(prefix.utf8)
        guard !bytes.isEmpty, bytes.count <= maxTopicPrefixBytes else {
            throw UsageError("mqtt-topic-prefix: 1 to \(maxTopicPrefixBytes) bytes are allowed, not \(bytes.count)")
        }
        if let bad = bytes.first(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 < 0x20 || $0 == 0x7F }) {
            let what = bad == UInt8(ascii: "+") || bad == UInt8(ascii: "#") ? "the wildcard '\(Character(Unicode.Scalar(bad)))'" : "a control character"
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(prefix))' has \(what); a prefix names topics, so no '+', '#' or control characters")
        }
        if bytes.first == UInt8(ascii: "$") {
            throw UsageError("mqtt-topic-prefix: may not start with '$' (topics beginning with '$' belong to the broker)")
        }
        if prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(prefix))' has an empty level (a leading, trailing or doubled '/')")
        }
    }

    static func checkPath(_ path: String, option: String) throws(UsageError) {
        guard !path.utf8.contains(0), path.utf8.count < 4096 else {
            throw UsageError("\(option): a path without NUL and shorter than 4096 bytes is needed")
        }
    }
}

/// The settings after `resolve`: the values the session uses. Its description and mirror leave the
/// password out, so printing or dumping it cannot leak it.
public struct MQTTConfiguration: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let settings: MQTTSettings
    public let clientID: String
    public let topics: MQTTTopics
    /// Read from `mqtt-password-file`; never logged, never in a description.
    let password: String?

    public init(settings: MQTTSettings, clientID: String, topics: MQTTTopics, password: String?) {
        self.settings = settings
        self.clientID = clientID
        self.topics = topics
        self.password = password
    }

    public var host: String { settings.host }
    public var port: Int { settings.effectivePort }
    public var description: String {
        "MQTTConfiguration(\(brokerDescription), client id \(clientID), prefix \(topics.prefix)"
            + (settings.username.isEmpty ? "" : ", user \(settings.username)") + (password == nil ? "" : ", password set") + ")"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["settings": settings, "clientID": clientID, "topics": topics, "password": password == nil ? "none" : "(hidden)"])
    }

    /// "broker mqtt.example:8883 (TLS)".
    public var brokerDescription: String { "broker \(host):\(port)\(settings.tlsEnabled ? " (TLS)" : "")" }
}

/// Files that hold secrets: the password file and the TLS key. Refused unless only the service user
/// can read them (no group or other permission bits, owned by the user the daemon runs as).
public enum SecretFile {
    public static let maxPasswordBytes = 1024

    /// Checks `path` like `checkPrivate` and reads it: the first line, without its line end.
    public static func readPassword(_ path: String, option: String) throws(UsageError) -> String {
        try checkPrivate(path, option: option)
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY) {
        case .success(let d): fd = d
        case .failure(let e): throw UsageError("\(option) \(path): cannot open: \(e)")
        }
        defer { _ = fd.close() }
        var buffer = [UInt8](repeating: 0, count: maxPasswordBytes + 2)
        var count = 0
        while count < buffer.count {
            let r = buffer.withUnsafeMutableBytes { raw in fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[count...])) }
            switch r {
            case .success(0): break
            case .success(let n): count += n; continue
            case .failure(let e): throw UsageError("\(option) \(path): cannot read: \(e)")
            }
            break
        }
        var bytes = Array(buffer[0..<count])
        if let newline = bytes.firstIndex(of: 0x0A) {
            guard bytes[(newline + 1)...].allSatisfy({ $0 == 0x0A || $0 == 0x0D }) else {
                throw UsageError("\(option) \(path): the file must hold the password on one line")
            }
            bytes = Array(bytes[..<newline])
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard bytes.count <= maxPasswordBytes else {
            throw UsageError("\(option) \(path): a password of at most \(maxPasswordBytes) bytes is allowed")
        }
        guard !bytes.isEmpty else { throw UsageError("\(option) \(path): the file is empty") }
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else {
            throw UsageError("\(option) \(path): the password must be UTF-8 text without NUL")
        }
        return text
    }

    /// A regular file, owned by the effective user, with no group or other permission bits.
    public static func checkPrivate(_ path: String, option: String) throws(UsageError) {
        let info = try status(path, option: option)
        let mode = info.st_mode & 0o7777
        if mode & 0o077 != 0 {
            throw UsageError("\(option) \(path): permissions \(octal(mode)) let others read it; allowed: only its owner "
                             + "(chmod 600 \(path))")
        }
        if info.st_uid != geteuid() {
            throw UsageError("\(option) \(path): owned by uid \(info.st_uid), not by the user scangate runs as "
                             + "(uid \(geteuid())); chown it to the service user")
        }
    }

    /// A regular file this process can read.
    public static func checkReadable(_ path: String, option: String) throws(UsageError) {
        _ = try status(path, option: option)
        guard access(path, R_OK) == 0 else {
            throw UsageError("\(option) \(path): cannot read: \(Errno.current)")
        }
    }

    static func status(_ path: String, option: String) throws(UsageError) -> stat {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw UsageError("\(option) \(path): \(Errno.current)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UsageError("\(option) \(path): not a regular file")
        }
        return info
    }

    static func octal(_ mode: mode_t) -> String {
        let s = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}

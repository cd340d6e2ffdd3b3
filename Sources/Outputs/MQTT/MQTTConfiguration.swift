import Core
import Platform
import Settings
#if canImport(Glibc)
import Glibc
#endif

extension MQTTSettings {
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
        if !tlsCA.isEmpty && tlsCA != "system" { try SecretFile.checkTrusted(tlsCA, option: "mqtt-tls-ca") }
        return MQTTConfiguration(settings: self, clientID: id, topics: MQTTTopics(prefix: prefix, site: siteTopic.isEmpty ? nil : siteTopic), password: password)
    }

    /// gethostname(2), or "scangate" when it fails.
    public static func systemHostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "scangate" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
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
/// can read them (no group or other permission bits, owned by the user the daemon runs as). And the CA
/// file, which is no secret but must not be changeable by others (`checkTrusted`).
public enum SecretFile {
    public static let maxPasswordBytes = 1024

    /// Opens `path` without following a symbolic link, checks the opened descriptor like `checkPrivate`
    /// (so the file checked is the file read: nothing can be swapped in between) and reads it: the first
    /// line, without its line end.
    public static func readPassword(_ path: String, option: String) throws(UsageError) -> String {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) {
        case .success(let d): fd = d
        case .failure(let e) where e.rawValue == ELOOP:
            throw UsageError("\(option) \(path): a symbolic link; give the file itself (a link could be pointed elsewhere)")
        case .failure(let e): throw UsageError("\(option) \(path): cannot open: \(e)")
        }
        defer { _ = fd.close() }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { throw UsageError("\(option) \(path): fstat: \(Errno.current)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw UsageError("\(option) \(path): not a regular file") }
        try checkPrivate(info, path, option: option)
        // Back to blocking reads (O_NONBLOCK only kept the open of a FIFO from waiting).
        let flags = fcntl(fd.rawValue, F_GETFL)
        guard flags >= 0, fcntl(fd.rawValue, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            throw UsageError("\(option) \(path): fcntl: \(Errno.current)")
        }
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
        try checkPrivate(try status(path, option: option), path, option: option)
    }

    static func checkPrivate(_ info: stat, _ path: String, option: String) throws(UsageError) {
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

    /// A file the broker's identity rests on (the CA): whoever can change it can stand in for the broker.
    /// Refused when the file is writable by group or others or owned by someone other than root or the
    /// user scangate runs as, or when its directory lets group or others replace it (writable without
    /// the sticky bit).
    public static func checkTrusted(_ path: String, option: String) throws(UsageError) {
        let info = try status(path, option: option)
        let mode = info.st_mode & 0o7777
        if mode & 0o022 != 0 {
            throw UsageError("\(option) \(path): permissions \(octal(mode)) let others change it (they could then stand in for the broker); "
                             + "chmod go-w \(path)")
        }
        if info.st_uid != 0 && info.st_uid != geteuid() {
            throw UsageError("\(option) \(path): owned by uid \(info.st_uid), who can change it (and stand in for the broker); "
                             + "chown root \(path)")
        }
        var directory = String(path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
        if directory.isEmpty { directory = path.hasPrefix("/") ? "/" : "." }
        var dir = stat()
        guard stat(directory, &dir) == 0 else { throw UsageError("\(option) \(path): its directory \(directory): \(Errno.current)") }
        let dirMode = dir.st_mode & 0o7777
        if dirMode & 0o022 != 0 && dirMode & 0o1000 == 0 {
            throw UsageError("\(option) \(path): its directory \(directory) (permissions \(octal(dirMode))) lets others replace the file "
                             + "(and stand in for the broker); chmod go-w \(directory)")
        }
        if dir.st_uid != 0 && dir.st_uid != geteuid() {
            throw UsageError("\(option) \(path): its directory \(directory) is owned by uid \(dir.st_uid), who can replace the file; "
                             + "chown root \(directory)")
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

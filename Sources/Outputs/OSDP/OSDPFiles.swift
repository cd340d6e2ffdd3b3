#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// The key file and the state file, and how both are written (`AtomicFile.replace`): a temporary file in
/// the same directory, fsync, rename over the old one, fsync of the directory. A power cut leaves the old file or the new
/// one, never half of either.
public enum OSDPFiles {
    /// Reads a small regular file (at most `limit` bytes) as text.
    /// A small text file through Platform's BoundedFile: a regular file (or a link to one) of at most
    /// `limit` bytes, opened without blocking (a FIFO or a device put there is refused, never waited on).
    static func readSmallFile(_ path: String, limit: Int, kind: String) throws(BoundedFileError) -> String {
        String(decoding: try BoundedFile.readAll(path: path, limit: FileSizeLimit(bytes: limit, kind: kind)), as: UTF8.self)
    }

    enum StateText { case text(String), missing, unreadable(String) }

    /// The state file's text. (Missing is asked first: swiftc 6.3.1 -O crashed in CopyPropagation, "found
    /// outside of lifetime use", on a catch of BoundedFileError that read both `errno` and `reasonText`.)
    static func readStateText(_ path: String) -> StateText {
        if case .failure(let e) = BoundedFile.kind(of: path), e == .noSuchFile { return .missing }
        do {
            return .text(try readSmallFile(path, limit: 4096, kind: "OSDP state files"))
        } catch {
            return .unreadable(error.reasonText)
        }
    }

    /// At most `limit` bytes from an opened regular file; more is an error.
    private static func readAll(_ fd: FileDescriptor, path: String, limit: Int) throws(SystemError) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while bytes.count <= limit {
            let n = try chunk.withUnsafeMutableBytes { fd.read(into: $0) }.get("read", path)
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= limit else { throw SystemError("read (more than \(limit) bytes)", path, .invalidArgument) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The SCBK in `path`, or nil when the file does not exist. The file must be a regular file (not a
    /// symbolic link), owned by the user ScanGate runs as, with no permission for group or others
    /// (0600 or 0400), and hold 32 hex digits (surrounding whitespace allowed). Errors name the file and
    /// what to do.
    public static func loadKey(_ path: String) throws(UsageError) -> OSDPKey? {
        // O_NONBLOCK: a FIFO put in the key's place is refused below, not waited on (no effect on a file).
        let opened = FileDescriptor.open(path, O_RDONLY | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)
        let fd: FileDescriptor
        switch opened {
        case .success(let value): fd = value
        case .failure(let e) where e == .noSuchFile: return nil
        case .failure(let e) where e.rawValue == ELOOP:
            throw UsageError("osdp-scbk-file \(path): is a symbolic link; point osdp-scbk-file at the key file itself")
        case .failure(let e):
            throw UsageError("osdp-scbk-file \(path): cannot be opened (\(e)); it must be readable by the service user")
        }
        defer { _ = fd.close() }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else {
            throw UsageError("osdp-scbk-file \(path): fstat failed (\(Errno.current))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UsageError("osdp-scbk-file \(path): not a regular file")
        }
        let me = geteuid()
        guard info.st_uid == me else {
            throw UsageError("osdp-scbk-file \(path): owned by \(userName(info.st_uid)), but ScanGate runs as \(userName(me)); run: chown \(loginName(me)) \(path)")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw UsageError("osdp-scbk-file \(path): mode \(octal(mode)) lets group or others read the key; run: chmod 600 \(path)")
        }
        let text: String
        do throws(SystemError) {
            text = try readAll(fd, path: path, limit: 256)
        } catch {
            throw UsageError("osdp-scbk-file \(path): \(error.operation) failed (\(error.errno))")
        }
        let digits = text.trimmingWhitespace()
        guard digits.utf8.count == 32, let bytes = Hex.decode(digits), let key = OSDPKey(bytes: bytes) else {
            throw UsageError("osdp-scbk-file \(path): must hold the 16-byte key as 32 hex digits (e.g. made with: openssl rand -hex 16)")
        }
        return key
    }

    /// Writes `contents` to `path` atomically with file mode `mode` (the temporary file is created with
    /// it, so the content is never readable by others, not even for a moment).
    ///
    /// The temporary file `.NAME.tmp-PID` of an earlier process with this pid (a power cut between its
    /// creation and the rename; after a reboot the service often gets the same pid) is reused or removed, so it
    /// never blocks a write; a symbolic link or anything else planted there is removed, never followed
    /// (`AtomicFile.replace`: temporary file, fsync, rename, fsync of the directory).
    public static func writeAtomically(_ contents: [UInt8], to path: String, mode: mode_t) throws(SystemError) {
        let (directory, name) = split(path)
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(path, with: contents, mode: mode, temporary: "\(directory)/.\(name).tmp-\(getpid())")
        } catch {
            throw error.error
        }
    }

    /// Removes the temporary files `.NAME.tmp-PID` that writes of `path` left behind when their process
    /// died before the rename (a power cut, kill -9), unless PID is a process still running (another
    /// writer's file in use). Returns the names removed; an error names the file and the errno.
    public static func removeStaleTemporaries(of path: String) throws(SystemError) -> [String] {
        let (directory, name) = split(path)
        let prefix = ".\(name).tmp-"
        var removed: [String] = []
        for entry in try Directory.entries(directory) where entry.hasPrefix(prefix) {
            guard let pid = pid_t(entry.dropFirst(prefix.count)), pid > 0 else { continue }
            if pid != getpid() && (kill(pid, 0) == 0 || errno != ESRCH) { continue }
            let file = "\(directory)/\(entry)"
            guard unlink(file) == 0 || errno == ENOENT else { throw SystemError("remove the stale temporary file", file, .current) }
            removed.append(file)
        }
        return removed
    }

    /// The text of a key file: 32 upper-case hex digits and a newline.
    static func keyFileText(_ key: OSDPKey) -> [UInt8] { Hex.encode(key.bytes) + [0x0A] }

    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    static func userName(_ uid: uid_t) -> String {
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name { return "\(String(cString: name)) (uid \(uid))" }
        return "uid \(uid)"
    }

    /// The name `chown` takes: the login name, or the number.
    static func loginName(_ uid: uid_t) -> String {
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name { return String(cString: name) }
        return "\(uid)"
    }

    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// What the panel changed that must survive a restart: the address and baud of osdp_COMSET, and the key
/// check value of the key it installed with osdp_KEYSET (so install mode is not entered again for it).
public struct OSDPPersistedState: Equatable, Sendable {
    public var address: UInt8?
    public var baud: Int?
    /// The first 3 bytes of AES-ECB(key, 16 zero bytes): identifies a key without revealing it.
    public var installedKeyCheck: [UInt8]?

    public init(address: UInt8? = nil, baud: Int? = nil, installedKeyCheck: [UInt8]? = nil) {
        self.address = address
        self.baud = baud
        self.installedKeyCheck = installedKeyCheck
    }

    /// The file's text.
    var text: String {
        var lines = ["# ScanGate OSDP state, written when the panel changes it (osdp_COMSET, osdp_KEYSET).",
                     "# Delete this file to use osdp-address and osdp-baud from the configuration again."]
        if let address { lines.append("address=\(address)") }
        if let baud { lines.append("baud=\(baud)") }
        if let installedKeyCheck { lines.append("installed-key-check=\(Hex.string(installedKeyCheck))") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses the state file; nil when it does not exist. Errors name the file and the line.
    public static func load(_ path: String) throws(UsageError) -> OSDPPersistedState? {
        let text: String
        switch OSDPFiles.readStateText(path) {
        case .text(let t): text = t
        case .missing: return nil
        case .unreadable(let why): throw UsageError("osdp-state-file \(path): \(why) (delete it to start from the configuration)")
        }
        var state = OSDPPersistedState()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw).trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            func bad(_ why: String) -> UsageError {
                UsageError("osdp-state-file \(path) line \(index + 1): \(why) (delete the file to start from the configuration)")
            }
            guard let equals = line.firstIndex(of: "=") else { throw bad("expected key=value, got '\(Logger.escape(line))'") }
            let key = String(line[..<equals]).trimmingWhitespace()
            let value = String(line[line.index(after: equals)...]).trimmingWhitespace()
            switch key {
            case "address":
                guard let v = Int(value), (0...126).contains(v) else { throw bad("address must be 0 to 126") }
                state.address = UInt8(v)
            case "baud":
                guard let v = Int(value), OSDPWire.baudRates.contains(v) else {
                    throw bad("baud must be one of \(OSDPWire.baudRates.map(String.init).joined(separator: ", "))")
                }
                state.baud = v
            case "installed-key-check":
                guard value.utf8.count == 6, let bytes = Hex.decode(value) else { throw bad("installed-key-check must be 6 hex digits") }
                state.installedKeyCheck = bytes
            default:
                throw bad("unknown key '\(Logger.escape(key))' (address, baud, installed-key-check)")
            }
        }
        return state
    }
}

/// A failed write of the key or the state: the PD answers the panel's command with a NAK.
public struct OSDPStoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Where the PD keeps what the panel sets. The PD calls it from the link thread before it acknowledges
/// the command, so an acknowledged KEYSET or COMSET has reached the disk.
public protocol OSDPStore: AnyObject {
    /// Stores a new SCBK (osdp_KEYSET) and records its check value. Throws when the key is not stored (the
    /// PD answers NAK and keeps the old key); returns, to be logged, a failure to record the check value,
    /// which does not undo the key (the PD answers ACK: it uses the new key, now and after a restart).
    func installKey(_ key: OSDPKey, check: [UInt8]) throws(OSDPStoreError) -> String?
    /// Stores the address and baud of an osdp_COMSET.
    func storeLink(address: UInt8, baud: Int) throws(OSDPStoreError)
}

/// The files of `OSDPSettings`: the key in `osdp-scbk-file` (mode 0600), the rest in `osdp-state-file`
/// (mode 0644).
public final class OSDPFileStore: OSDPStore {
    public let keyPath: String
    public let statePath: String
    private var state: OSDPPersistedState

    public init(keyPath: String, statePath: String, state: OSDPPersistedState) {
        self.keyPath = keyPath
        self.statePath = statePath
        self.state = state
    }

    /// The key file decides which key the reader uses after a restart (`OSDPStartup`: a key file is proof
    /// enough that a key is installed; the state file's check value only says whether a panel put it
    /// there). So once the key file is durable the KEYSET has taken effect, and a state file that cannot
    /// be written then (a full disk) is reported, not a reason to NAK: a NAK would leave the panel on the
    /// old key while the reader, after a restart, used the new one. The check value is kept in memory and
    /// written with the next change of the state file.
    public func installKey(_ key: OSDPKey, check: [UInt8]) throws(OSDPStoreError) -> String? {
        do throws(SystemError) {
            try OSDPFiles.writeAtomically(OSDPFiles.keyFileText(key), to: keyPath, mode: 0o600)
        } catch {
            throw OSDPStoreError("osdp-scbk-file \(keyPath): \(error)")
        }
        var next = state
        next.installedKeyCheck = check
        do throws(OSDPStoreError) {
            try write(next)
        } catch {
            state = next
            return "the key is stored in \(keyPath), but recording its check value failed: \(error)"
        }
        return nil
    }

    public func storeLink(address: UInt8, baud: Int) throws(OSDPStoreError) {
        var next = state
        next.address = address
        next.baud = baud
        try write(next)
    }

    private func write(_ next: OSDPPersistedState) throws(OSDPStoreError) {
        do throws(SystemError) {
            try OSDPFiles.writeAtomically(Array(next.text.utf8), to: statePath, mode: 0o644)
        } catch {
            throw OSDPStoreError("osdp-state-file \(statePath): \(error)")
        }
        state = next
    }
}

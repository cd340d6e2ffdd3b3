#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// The rollback guard (policy-state-file): the newest `iat` this kiosk has accepted for each status-list
/// uri, kept across restarts, so that an older list (an attacker's or an installer's stale copy) is
/// refused. Replaced whole with `AtomicFile.replace` (a power cut leaves the old or the new file, never
/// a torn one). The file is JSON: `{"status_lists":[{"uri":"...","iat":1764590000}]}`; uris are
/// compared byte for byte. With a site policy (policy-file) it also holds the highest `ver` and that
/// document's `iat`: `"policy":{"ver":7,"iat":1764590000}`.
public struct PolicyState: Equatable, Sendable {
    public private(set) var entries: [(uri: String, issuedAt: Int64)] = []
    /// The highest site policy ver accepted, with its iat (nil: none yet).
    public private(set) var policy: (version: Int64, issuedAt: Int64)? = nil

    public init() {}

    /// A state file bigger than this is refused (10,000 uris of 2 KiB fit).
    public static let limit = FileSizeLimit(bytes: 32 << 20, kind: "policy state files")

    public func issuedAt(uri: String) -> Int64? {
        entries.first { $0.uri.bytesEqual(uri) }?.issuedAt
    }

    /// Records `iat` for `uri` when it is newer than the one held; true when it changed the state.
    @discardableResult
    public mutating func record(uri: String, issuedAt: Int64) -> Bool {
        if let i = entries.firstIndex(where: { $0.uri.bytesEqual(uri) }) {
            guard issuedAt > entries[i].issuedAt else { return false }
            entries[i].issuedAt = issuedAt
            return true
        }
        entries.append((uri, issuedAt))
        return true
    }

    /// Whether a site policy of `version` issued at `issuedAt` would roll back the one held: a lower
    /// ver, or the same ver issued earlier.
    public func isRollback(version: Int64, issuedAt: Int64) -> Bool {
        guard let held = policy else { return false }
        return version < held.version || (version == held.version && issuedAt < held.issuedAt)
    }

    /// Records a site policy's ver and iat unless it is a rollback or the one held; true when it changed.
    @discardableResult
    public mutating func recordPolicy(version: Int64, issuedAt: Int64) -> Bool {
        guard !isRollback(version: version, issuedAt: issuedAt) else { return false }
        if let held = policy, held.version == version, held.issuedAt == issuedAt { return false }
        policy = (version, issuedAt)
        return true
    }

    public static func == (a: PolicyState, b: PolicyState) -> Bool {
        a.policy?.version == b.policy?.version && a.policy?.issuedAt == b.policy?.issuedAt
            && a.entries.count == b.entries.count
            && zip(a.entries, b.entries).allSatisfy { $0.uri.bytesEqual($1.uri) && $0.issuedAt == $1.issuedAt }
    }

    public var json: String {
        let lists = entries.map { JSONText.object([("uri", JSONText.string($0.uri)), ("iat", String($0.issuedAt))]) }
        var members = [("status_lists", "[" + lists.joined(separator: ",") + "]")]
        if let policy {
            members.append(("policy", JSONText.object([("ver", String(policy.version)), ("iat", String(policy.issuedAt))])))
        }
        return JSONText.object(members) + "\n"
    }

    /// Reads `path`; a file that does not exist is the empty state of a first start. A file that exists
    /// but cannot be read or parsed is an error (the guard must not silently forget what it held).
    public static func load(path: String) throws(StatusListError) -> PolicyState {
        let bytes: [UInt8]
        do throws(BoundedFileError) {
            let file = try BoundedFile.open(path, limit: limit)
            defer { file.close() }
            bytes = try file.readAll()
        } catch {
            if error.errno?.rawValue == ENOENT { return PolicyState() }
            throw StatusListError("policy-state-file \(path): \(error.reasonText)")
        }
        return try parse(bytes, path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws(StatusListError) -> PolicyState {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(bytes, maxBytes: limit.bytes, maxDepth: 4)
        } catch {
            throw StatusListError("policy-state-file \(path): \(error); it is written whole by scangate, so it was changed by hand or the disk is failing (remove it to start afresh, which forgets the rollback guard)")
        }
        guard let lists = value["status_lists"]?.arrayValue else {
            throw StatusListError("policy-state-file \(path): no \"status_lists\" array")
        }
        var state = PolicyState()
        for item in lists {
            guard let uri = item["uri"]?.stringValue, let iat = item["iat"]?.numberValue?.int64 else {
                throw StatusListError("policy-state-file \(path): each status_lists entry needs a uri string and a whole iat")
            }
            state.record(uri: uri, issuedAt: iat)
        }
        if let policy = value["policy"] {
            guard let ver = policy["ver"]?.numberValue?.int64, let iat = policy["iat"]?.numberValue?.int64 else {
                throw StatusListError("policy-state-file \(path): \"policy\" needs a whole ver and iat")
            }
            state.recordPolicy(version: ver, issuedAt: iat)
        }
        return state
    }

    /// Replaces `path` with this state, durably (mode 0600).
    public func save(path: String) throws(StatusListError) {
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(path, with: Array(json.utf8), mode: 0o600)
        } catch {
            throw StatusListError("policy-state-file \(path): cannot write: \(error)")
        }
    }
}

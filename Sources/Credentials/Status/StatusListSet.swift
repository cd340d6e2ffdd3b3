import Core
import Platform
import Settings

/// The status lists in force (credential-status-list): one per uri, each verified with credential-keys and
/// not older than the newest `iat` this kiosk has accepted for its uri (PolicyState). A value, built at start.
///
/// A list file that fails (bad signature, bad claims, a zip bomb, an older iat) is not used and is logged.
/// The last list verified for each uri is kept beside the state file (`STATE.lists/`) and stays in force
/// (until its own exp) when no file gives a usable list for its uri; without one, the passes that name the
/// uri meet `policy-stale`. A path that is neither a readable file nor a
/// folder is a configuration error (exit 2).
public struct StatusListSet: Sendable {
    /// The lists in force, uris compared byte for byte.
    public let lists: [StatusListToken]
    /// One line per list file refused: the file and why (never the token).
    public let refused: [String]
    /// The uris of refused files, so a pass naming one is told why its list is missing.
    public let refusedURIs: [String]
    /// The rollback guard after loading (the newest iat per uri).
    public let state: PolicyState
    /// One line per kept copy in force because no file gave a usable list for its uri.
    public var kept: [String] = []
    /// Where each list in force came from, in the order of `lists` (for `scangate policy show`).
    public var origins: [Origin] = []

    /// A list in force was read from a file in credential-status-list, or is the copy kept beside the state file.
    public enum Origin: Equatable, Sendable {
        case file(String)
        case kept(String)
    }

    /// Whether `token` is in force as the kept copy rather than from a file.
    public func isKept(_ token: StatusListToken) -> Bool {
        guard let i = lists.firstIndex(where: { $0.uri.bytesEqual(token.uri) }), i < origins.count else { return false }
        if case .kept = origins[i] { return true }
        return false
    }

    public func list(uri: String) -> StatusListToken? { lists.first { $0.uri.bytesEqual(uri) } }

    /// Most list files read from a folder.
    public static let maxFiles = DirectoryLimit(entries: 1000, kind: "status list folders")
    /// The most bytes of inflated lists held at once, all files together (a folder of 1000 lists of 16 MiB
    /// each must not exhaust a kiosk's memory): 64 MiB, half a billion 1-bit entries.
    public static let maxTotalBytes = 64 << 20

    /// Reads `path` (a file, or every regular file in a folder, in name order), verifies each, refuses any
    /// whose iat is older than the state holds for its uri, and records newer iats in the state file
    /// before returning (so a restart never accepts a list older than one used before it).
    public static func load(path: String, keys: CredentialKeySet, algorithms: [SignatureAlgorithm],
                            statePath: String) throws(UsageError) -> StatusListSet {
        let loaded = try read(path: path, keys: keys, algorithms: algorithms, statePath: statePath)
        if loaded.stateChanged {
            do throws(StatusListError) {
                try loaded.set.state.save(path: statePath)
            } catch {
                throw UsageError(error.message + " (the rollback guard must be recorded before a list is used)")
            }
        }
        // The lists just verified are kept beside the state file, to stay in force when a later file is
        // refused or missing.
        if !loaded.toKeep.isEmpty {
            let directory = keptDirectory(statePath)
            if case .failure(let e) = FilePath.makeDirectory(directory, mode: 0o700) {
                throw UsageError("policy-state-file \(statePath): cannot make \(directory) for the kept status lists: \(e)")
            }
            for (uri, bytes) in loaded.toKeep {
                do throws(AtomicFile.Failure) {
                    try AtomicFile.replace(keptPath(statePath, uri: uri), with: bytes, mode: 0o600)
                } catch {
                    throw UsageError("policy-state-file \(statePath): cannot keep the status list for \(JSONText.asciiString(uri)): \(error)")
                }
            }
        }
        return loaded.set
    }

    /// Where the last verified lists are kept: `STATE.lists/`, one file per uri named by its SHA-256.
    public static func keptDirectory(_ statePath: String) -> String { statePath + ".lists" }

    static func keptPath(_ statePath: String, uri: String) -> String {
        let hash = (try? CryptoDigest.sha256(Array(uri.utf8))).map { Hex.string($0.prefix(16), lowercase: true) } ?? "unhashable"
        return keptDirectory(statePath) + "/" + hash + ".jwt"
    }

    /// What `load` does without writing the state file: for `Catalog.check` (check-config, doctor), which
    /// must refuse what `run` refuses (a missing path, a state file that does not parse) and change nothing.
    public static func read(path: String, keys: CredentialKeySet, algorithms: [SignatureAlgorithm],
                            statePath: String) throws(UsageError) -> (set: StatusListSet, stateChanged: Bool, toKeep: [(uri: String, bytes: [UInt8])]) {
        let held: PolicyState
        do throws(StatusListError) {
            held = try PolicyState.load(path: statePath)
        } catch {
            throw UsageError(error.message)
        }
        var files: [String]
        if KeyFileReader.isDirectory(path) {
            do throws(BoundedFileError) {
                files = try BoundedDirectory.names(path, limit: maxFiles).sorted().filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
            } catch {
                throw UsageError("credential-status-list \(path): \(error.reasonText) (give a statuslist+jwt or statuslist+cwt file, or a directory of them)")
            }
        } else {
            files = [path]
        }
        var candidates: [(file: String, token: StatusListToken, bytes: [UInt8])] = []
        var refused: [String] = []
        var refusedURIs: [String] = []
        for file in files {
            let bytes: [UInt8]
            do throws(BoundedFileError) {
                bytes = try readTokenFile(file)
            } catch {
                // The one file named: a configuration error. In a folder: that file is skipped and said.
                if files.count == 1 && file == path {
                    throw UsageError("credential-status-list \(error.path): \(error.reasonText) (give a statuslist+jwt or statuslist+cwt file, or a directory of them)")
                }
                refused.append("\(file): \(error.reasonText)")
                continue
            }
            do throws(StatusListError) {
                let token = try StatusListToken.verify(bytes, keys: keys, algorithms: algorithms)
                let held = candidates.reduce(0) { $0 + $1.token.list.bytes.count }
                guard held + token.list.bytes.count <= maxTotalBytes else {
                    throw StatusListError("the lists read before it already hold \(held) bytes; all lists together may hold \(maxTotalBytes)")
                }
                candidates.append((file, token, bytes))
            } catch {
                refused.append("\(file) (\(TokenFingerprint.describe(bytes))): \(error.message)")
            }
        }
        var state = held
        var lists: [StatusListToken] = []
        var raw: [[UInt8]] = []
        var origins: [Origin] = []
        for (file, token, bytes) in candidates {
            if let why = rolledBack(token, held: held, statePath: statePath) {
                refused.append("\(file) (\(token.fingerprint)): " + why)
                refusedURIs.append(token.uri)
                continue
            }
            if let i = lists.firstIndex(where: { $0.uri.bytesEqual(token.uri) }) {
                // Two files for one uri: the newer iat is in force; on a tie the first file (by name).
                if token.issuedAt > lists[i].issuedAt {
                    refused.append("superseded: \(lists[i].fingerprint) for \(JSONText.asciiString(token.uri)) by \(file), whose iat is newer")
                    lists[i] = token
                    raw[i] = bytes
                    origins[i] = .file(file)
                } else {
                    refused.append("\(file) (\(token.fingerprint)): superseded: another file holds \(JSONText.asciiString(token.uri)) with an iat as new or newer")
                }
                continue
            }
            lists.append(token)
            raw.append(bytes)
            origins.append(.file(file))
        }
        // Kept only when it differs from the copy already kept (a restart with the same list writes nothing).
        var toKeep: [(uri: String, bytes: [UInt8])] = []
        for (token, bytes) in zip(lists, raw) where keptBytes(statePath, uri: token.uri) != bytes {
            toKeep.append((token.uri, bytes))
        }
        for token in lists { state.record(uri: token.uri, issuedAt: token.issuedAt) }
        // A uri the guard holds but no file gave (refused, or missing): the kept copy of the list last
        // verified stays in force, when it is the very list whose iat the guard holds.
        var keptNotes: [String] = []
        for entry in held.entries where !lists.contains(where: { $0.uri.bytesEqual(entry.uri) }) {
            guard let bytes = keptBytes(statePath, uri: entry.uri) else { continue }
            do throws(StatusListError) {
                let kept = try StatusListToken.verify(bytes, keys: keys, algorithms: algorithms)
                guard kept.uri.bytesEqual(entry.uri), kept.issuedAt == entry.issuedAt else {
                    refused.append("kept copy for \(JSONText.asciiString(entry.uri)) (\(kept.fingerprint)): not the list the guard holds (iat \(entry.issuedAt))")
                    continue
                }
                let heldBytes = lists.reduce(0) { $0 + $1.list.bytes.count }
                guard heldBytes + kept.list.bytes.count <= maxTotalBytes else {
                    refused.append("kept copy for \(JSONText.asciiString(entry.uri)): the lists in force already hold \(heldBytes) bytes; all lists together may hold \(maxTotalBytes)")
                    continue
                }
                lists.append(kept)
                origins.append(.kept(keptPath(statePath, uri: entry.uri)))
                keptNotes.append("the kept copy of \(JSONText.asciiString(entry.uri)) stays in force (iat \(CredentialVerifier.time(Double(kept.issuedAt))), "
                               + "\(kept.fingerprint)): no file in credential-status-list gave a list for it that could be used")
            } catch {
                refused.append("kept copy for \(JSONText.asciiString(entry.uri)): \(error.message)")
            }
        }
        refusedURIs.removeAll { uri in lists.contains { $0.uri.bytesEqual(uri) } }
        return (StatusListSet(lists: lists, refused: refused, refusedURIs: refusedURIs, state: state, kept: keptNotes, origins: origins),
                state != held, toKeep)
    }

    /// Why `token` is refused as rolled back ("rolled back: iat ... is older than ..."), nil when the guard
    /// `held` has no newer iat for its uri.
    public static func rolledBack(_ token: StatusListToken, held: PolicyState, statePath: String) -> String? {
        guard let newest = held.issuedAt(uri: token.uri), token.issuedAt < newest else { return nil }
        return "rolled back: iat \(CredentialVerifier.time(Double(token.issuedAt))) is older than \(CredentialVerifier.time(Double(newest))), "
            + "the newest this kiosk accepted for \(JSONText.asciiString(token.uri)) (policy-state-file \(statePath))"
    }

    /// A status list token file's bytes, read within `StatusListToken.maxTokenBytes` (a regular file only).
    public static func readTokenFile(_ path: String) throws(BoundedFileError) -> [UInt8] {
        let file = try BoundedFile.open(path, limit: FileSizeLimit(bytes: StatusListToken.maxTokenBytes, kind: "status list files"))
        defer { file.close() }
        return try file.readAll()
    }

    /// The kept copy of `uri`'s list, nil when there is none (or it cannot be read).
    static func keptBytes(_ statePath: String, uri: String) -> [UInt8]? {
        do throws(BoundedFileError) {
            return try readTokenFile(keptPath(statePath, uri: uri))
        } catch {
            return nil
        }
    }

    /// The status of a verified pass that names `reference`, at `now`: nil when it may be accepted (with a
    /// note for the log in `note`), or the refusal.
    public func check(_ reference: StatusReference, now: Int64, stale: PolicyStale) -> Result<String?, Refusal> {
        let uri = JSONText.asciiString(reference.uri)
        guard let token = list(uri: reference.uri) else {
            let why = refusedURIs.contains { $0.bytesEqual(reference.uri) } ? "its list was refused at start (see the log)" : "no list for it is held"
            if stale == .allow {
                return .success("status list \(uri) not held (\(why)); accepted by policy-stale = allow")
            }
            return .failure(Refusal(.policyStale, "status list \(uri): \(why) (policy-stale = \(stale.rawValue))"))
        }
        var note: String?
        if now >= token.expiresAt {
            let age = "status list \(uri) expired at \(CredentialVerifier.time(Double(token.expiresAt))), \(now - token.expiresAt) s ago"
            guard stale != .deny else {
                return .failure(Refusal(.policyStale, age + " (policy-stale = deny)"))
            }
            note = age + "; it still decides (policy-stale = \(stale.rawValue))"
        }
        guard let status = token.list.status(at: reference.index) else {
            return .failure(Refusal(.revoked, "idx \(reference.index) is beyond status list \(uri) (\(token.list.count) entries): its status cannot be read"))
        }
        guard status == 0 else {
            return .failure(Refusal(.revoked, "status list \(uri) idx \(reference.index) is \(StatusList.describe(status)) (list iat \(CredentialVerifier.time(Double(token.issuedAt))))"))
        }
        return .success(note)
    }

    /// "2 status lists (https://a/1: 1000 entries of 1 bit, iat ..., exp ...; ...)": for the start log.
    public var summary: String {
        "\(lists.count) status list\(lists.count == 1 ? "" : "s")" + (lists.isEmpty ? "" : " (" + lists.map { t in
            "\(JSONText.asciiString(t.uri)): \(t.format == .cwt ? "CWT, " : "")\(t.list.count) entries of \(t.list.bits) bit\(t.list.bits == 1 ? "" : "s"), kid \(Logger.escape(t.keyID)), "
                + "iat \(CredentialVerifier.time(Double(t.issuedAt))), exp \(CredentialVerifier.time(Double(t.expiresAt))), \(t.fingerprint)"
        }.joined(separator: "; ") + ")")
    }
}

import Core
import Settings

/// One key that verifies passes, with the kid that selects it.
public struct CredentialKey: Sendable {
    public let keyID: String
    public let publicKey: PublicKey
    /// Where it came from, for logs and doctor: "/etc/scangate/keys.jwks key 1".
    public let source: String

    public var algorithm: SignatureAlgorithm { publicKey.algorithm }

    public init(keyID: String, publicKey: PublicKey, source: String) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.source = source
    }
}

/// The keys of credential-keys: several may be valid at once (rotation). Built whole or not at all, so a
/// reload that fails keeps the keys that worked.
///
/// credential-keys names one of:
/// - a JWKS file (RFC 7517 §5, JSON `{"keys":[...]}`): OKP/Ed25519 keys (`x`) and EC/P-256 keys
///   (`x`, `y`), each with a `kid`;
/// - a PEM file holding one public key (`-----BEGIN PUBLIC KEY-----`); its kid is the file name without
///   `.pem` (`site-2025.pem` has kid `site-2025`);
/// - a directory: every `NAME.pem` in it is one key with kid NAME (other files are listed in `ignored`).
///   The directory, like each file, must not be writable by group or others.
public struct CredentialKeySet: Sendable {
    public let keys: [CredentialKey]
    /// The path it was read from.
    public let source: String
    /// What was skipped and why (a JWKS entry of a type this program does not use, a file that is not .pem).
    public let ignored: [String]

    /// At most this many keys in a set.
    public static let maxKeys = 64
    /// A kid longer than this is refused (in a key file) or unknown (in a token).
    public static let maxKeyIDLength = 128

    public init(keys: [CredentialKey], source: String, ignored: [String] = []) {
        self.keys = keys
        self.source = source
        self.ignored = ignored
    }

    /// The key whose kid has exactly these bytes (RFC 7515 §4.1.4: kid is case-sensitive and compared as
    /// is; `==` would let the kid "\u{212A}1", KELVIN SIGN, find the key "K1").
    public func key(id: String) -> CredentialKey? { keys.first { $0.keyID.bytesEqual(id) } }
    public func keys(for algorithm: SignatureAlgorithm) -> [CredentialKey] { keys.filter { $0.algorithm == algorithm } }

    /// "2 keys (site-2025 ed25519, site-2026 es256) from /etc/scangate/keys.jwks".
    public var summary: String {
        "\(keys.count) key\(keys.count == 1 ? "" : "s") (" + keys.map { "\($0.keyID) \($0.algorithm)" }.joined(separator: ", ")
            + ") from \(source)"
    }

    /// Loads credential-keys: a JWKS file, a PEM file, or a directory of KID.pem files (see the type).
    public static func load(path: String) throws(KeyFileError) -> CredentialKeySet {
        if KeyFileReader.isDirectory(path) { return try loadDirectory(path) }
        let bytes = try KeyFileReader.read(path, .publicKey)
        let first = bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        if first == UInt8(ascii: "{") { return try parseJWKS(bytes, file: path) }
        if first == UInt8(ascii: "-") {
            let key = try pemKey(bytes, file: path, keyID: try keyID(fromFileName: path))
            return CredentialKeySet(keys: [key], source: path)
        }
        throw KeyFileError(file: path, "is neither a JWKS (JSON with \"keys\") nor a PEM public key")
    }

    static func loadDirectory(_ path: String) throws(KeyFileError) -> CredentialKeySet {
        var keys: [CredentialKey] = []
        var ignored: [String] = []
        for name in try KeyFileReader.listDirectory(path) {
            let file = path.hasSuffix("/") ? path + name : path + "/" + name
            guard name.hasSuffix(".pem"), !name.hasPrefix(".") else {
                ignored.append("\(file): not a NAME.pem file")
                continue
            }
            let kid = try keyID(fromFileName: file)
            let key = try pemKey(try KeyFileReader.read(file, .publicKey), file: file, keyID: kid)
            keys.append(key)
            guard keys.count <= maxKeys else { throw KeyFileError(file: path, "holds more than \(maxKeys) keys") }
        }
        guard !keys.isEmpty else { throw KeyFileError(file: path, "holds no KID.pem public key files") }
        return CredentialKeySet(keys: keys, source: path, ignored: ignored)
    }

    /// The kid of a PEM file: its name without the directory and `.pem`. Letters, digits, `.`, `_`, `-`.
    static func keyID(fromFileName path: String) throws(KeyFileError) -> String {
        var name = Substring(path.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        if name.hasSuffix(".pem") { name = name.dropLast(4) }
        let allowed = name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x2D
        }
        guard !name.isEmpty, name.count <= 64, allowed else {
            throw KeyFileError(file: path, "the file name must be KID.pem, KID being 1-64 letters, digits, '.', '_' or '-'")
        }
        return String(name)
    }

    static func pemKey(_ bytes: [UInt8], file: String, keyID: String) throws(KeyFileError) -> CredentialKey {
        let begins = occurrences(of: Array("-----BEGIN ".utf8), in: bytes)
        guard begins == 1 else {
            throw KeyFileError(file: file, key: "kid \(JSONText.string(keyID))",
                               begins == 0 ? "holds no PEM block" : "holds \(begins) PEM blocks; put one key in each KID.pem file")
        }
        if occurrences(of: Array("PRIVATE KEY-----".utf8), in: bytes) > 0 {
            throw KeyFileError(file: file, key: "kid \(JSONText.string(keyID))",
                               "holds a private key; the kiosk needs only the public key (openssl pkey -pubout)")
        }
        do throws(CryptoError) {
            return CredentialKey(keyID: keyID, publicKey: try PublicKey.fromPEM(bytes, subject: file), source: file)
        } catch {
            throw KeyFileError(file: file, key: "kid \(JSONText.string(keyID))", error.detail)
        }
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
        var count = 0
        var i = 0
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) {
                count += 1
                i += needle.count
            } else {
                i += 1
            }
        }
        return count
    }

    /// Parses a JWKS (RFC 7517 §5) from bytes. Strict JSON (Core's JSONValue: duplicate members refused).
    /// Every usable key needs a kid, unique in the set. Keys of other types (RSA, X25519, P-384) are skipped
    /// and listed in `ignored`, as RFC 7517 §5 asks; a symmetric (`oct`) key or one with private members
    /// (`d`) is an error, since neither belongs on a kiosk.
    public static func parseJWKS(_ bytes: [UInt8], file: String) throws(KeyFileError) -> CredentialKeySet {
        let document: JSONValue
        do throws(JSONParseError) {
            document = try JSONValue.parse(bytes, maxBytes: KeyFileReader.maxFileBytes, maxDepth: 8)
        } catch {
            throw KeyFileError(file: file, error.description)
        }
        guard let entries = document["keys"]?.arrayValue else {
            throw KeyFileError(file: file, "a JWKS is a JSON object with a \"keys\" array (RFC 7517 section 5)")
        }
        guard entries.count <= maxKeys else { throw KeyFileError(file: file, "holds \(entries.count) keys; at most \(maxKeys)") }
        var keys: [CredentialKey] = []
        var ignored: [String] = []
        for (index, entry) in entries.enumerated() {
            var label = "key \(index + 1)"
            guard let jwk = entry.objectValue else { throw KeyFileError(file: file, key: label, "is not a JSON object") }
            if let kid = jwk["kid"]?.stringValue { label += " (kid \(JSONText.string(kid)))" }
            func fail(_ message: String) -> KeyFileError { KeyFileError(file: file, key: label, message) }
            func member(_ name: String) throws(KeyFileError) -> String? {
                guard let value = jwk[name] else { return nil }
                guard let text = value.stringValue else { throw fail("\"\(name)\" must be a string") }
                return text
            }
            guard let kty = try member("kty") else { throw fail("has no \"kty\"") }
            // Member values are compared byte for byte (RFC 7517 §4: case-sensitive strings).
            if kty.bytesEqual("oct") { throw fail("is a symmetric (oct) key; passes are verified with Ed25519 or P-256 public keys only") }
            for secret in ["d", "p", "q", "dp", "dq", "qi", "k"] where jwk[secret] != nil {
                throw fail("holds private key material (\"\(secret)\"); give the kiosk the public key only")
            }
            if let use = try member("use"), !use.bytesEqual("sig") {
                ignored.append("\(file) \(label): \"use\" is \(JSONText.string(use)), not \"sig\"; skipped")
                continue
            }
            if let ops = jwk["key_ops"] {
                guard let list = ops.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                    throw fail("\"key_ops\" must be an array of strings")
                }
                guard list.contains(.string("verify")) else {
                    ignored.append("\(file) \(label): \"key_ops\" does not include \"verify\"; skipped")
                    continue
                }
            }
            let crv = try member("crv")
            let algorithm: SignatureAlgorithm
            let okp = kty.bytesEqual("OKP"), ec = kty.bytesEqual("EC")
            switch (okp, ec, crv) {
            case (true, _, let c?) where c.bytesEqual("Ed25519"): algorithm = .ed25519
            case (_, true, let c?) where c.bytesEqual("P-256"): algorithm = .es256
            case (true, _, _), (_, true, _):
                ignored.append("\(file) \(label): \(kty) curve \(crv.map { JSONText.string($0) } ?? "(none)") is not used for passes; skipped")
                continue
            default:
                ignored.append("\(file) \(label): key type \(JSONText.string(kty)) is not used for passes; skipped")
                continue
            }
            if let alg = try member("alg") {
                guard SignatureAlgorithm(joseName: alg) == algorithm else {
                    throw fail("\"alg\" \(JSONText.string(alg)) does not fit a \(kty) \(crv ?? "") key (allowed: \(algorithm == .ed25519 ? "EdDSA or Ed25519" : "ES256"))")
                }
            }
            guard let kid = try member("kid") else { throw fail("has no \"kid\"; each key needs one, as tokens select keys by kid") }
            guard !kid.isEmpty, kid.utf8.count <= maxKeyIDLength else {
                throw fail("\"kid\" must be 1 to \(maxKeyIDLength) bytes")
            }
            guard !keys.contains(where: { $0.keyID.bytesEqual(kid) }) else { throw fail("kid appears twice in the set") }
            func coordinate(_ name: String) throws(KeyFileError) -> [UInt8] {
                guard let text = try member(name) else { throw fail("has no \"\(name)\"") }
                guard let bytes = Base64.urlDecode(text) else { throw fail("\"\(name)\" is not base64url without padding") }
                return bytes
            }
            let x = try coordinate("x")
            let y = algorithm == .es256 ? try coordinate("y") : []
            let publicKey: PublicKey
            do throws(CryptoError) {
                switch algorithm {
                case .ed25519: publicKey = try PublicKey.ed25519(x: x, subject: "\(file) \(label)")
                case .es256: publicKey = try PublicKey.p256(x: x, y: y, subject: "\(file) \(label)")
                }
            } catch {
                throw fail(error.detail)
            }
            keys.append(CredentialKey(keyID: kid, publicKey: publicKey, source: "\(file) key \(index + 1)"))
        }
        guard !keys.isEmpty else {
            throw KeyFileError(file: file, "holds no Ed25519 (OKP) or P-256 (EC) signing key with a kid"
                               + (ignored.isEmpty ? "" : " (" + ignored.joined(separator: "; ") + ")"))
        }
        return CredentialKeySet(keys: keys, source: file, ignored: ignored)
    }

    /// A JWKS text for public keys (keygen): one object per key with kty, crv, x[, y], kid, alg, use.
    public static func jwksText(_ keys: [(keyID: String, key: PublicKey)]) throws(CryptoError) -> String {
        var lines: [String] = []
        for entry in keys {
            var fields = try entry.key.jwkMembers().map { ($0.0, JSONText.string($0.1)) }
            fields.append(("kid", JSONText.string(entry.keyID)))
            fields.append(("alg", JSONText.string(entry.key.algorithm.joseName)))
            fields.append(("use", JSONText.string("sig")))
            lines.append("    " + JSONText.object(fields))
        }
        return "{\"keys\": [\n" + lines.joined(separator: ",\n") + "\n]}\n"
    }
}

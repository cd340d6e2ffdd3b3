#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Settings

/// `scangate credential keygen`: a new signing key in DIR/KID.key (PKCS#8 PEM, mode 0600) and its public
/// half added to DIR/credential-keys.jwks (mode 0644; created, or extended so old keys stay valid while
/// passes signed with them are still around - rotation).
public enum KeyGeneration {
    public struct Written: Sendable {
        public let keyID: String
        public let privateKeyFile: String
        public let jwksFile: String
        /// Keys in the JWKS after the new one was added.
        public let keysInSet: Int
    }

    public static let jwksName = "credential-keys.jwks"

    public static func generate(directory: String, algorithm: SignatureAlgorithm, keyID chosen: String?) throws(KeyFileError) -> Written {
        if !KeyFileReader.isDirectory(directory) {
            guard mkdir(directory, 0o700) == 0 else { throw KeyFileError(file: directory, "cannot create the directory: \(Errno.current)") }
            // The new directory's name is durable only once its parent is synced.
            do throws(SystemError) { try Directory.syncParent(of: directory) } catch {
                throw KeyFileError(file: error.subject, "\(error.operation): \(error.errno)")
            }
        }
        let key: PrivateKey
        let publicKey: PublicKey
        let kid: String
        do throws(CryptoError) {
            key = try PrivateKey.generate(algorithm)
            publicKey = try key.publicKey()
            if let chosen { kid = chosen } else { kid = try publicKey.defaultKeyID() }
        } catch {
            throw KeyFileError(file: directory, "key generation: \(error)")
        }
        guard kid.utf8.count <= 64, (try? CredentialKeySet.keyID(fromFileName: kid + ".pem")) == kid else {
            throw KeyFileError(file: directory, "--kid must be 1-64 letters, digits, '.', '_' or '-' (it names the key file)")
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        let jwksPath = base + jwksName
        let privatePath = base + kid + ".key"
        // The existing set, kept member for member (keys of other types included).
        var entries: [String] = []
        if access(jwksPath, F_OK) == 0 {
            let bytes = try KeyFileReader.read(jwksPath, .publicKey)
            let existing = try CredentialKeySet.parseJWKS(bytes, file: jwksPath)
            guard existing.key(id: kid) == nil else { throw KeyFileError(file: jwksPath, key: "kid \(JSONText.string(kid))", "already holds this kid; choose another with --kid") }
            do throws(JSONParseError) {
                entries = (try JSONValue.parse(bytes)["keys"]?.arrayValue ?? []).map(\.text)
            } catch {
                throw KeyFileError(file: jwksPath, error.description)
            }
        }
        let pem: [UInt8]
        let jwk: String
        do throws(CryptoError) {
            pem = try key.pkcs8PEM()
            var fields = try publicKey.jwkMembers().map { ($0.0, JSONText.string($0.1)) }
            fields += [("kid", JSONText.string(kid)), ("alg", JSONText.string(algorithm.joseName)), ("use", JSONText.string("sig"))]
            jwk = JSONText.object(fields)
        } catch {
            throw KeyFileError(file: privatePath, error.description)
        }
        try createWhole(privatePath, pem, mode: 0o600)
        entries.append(jwk)
        let text = "{\"keys\": [\n" + entries.map { "    " + $0 }.joined(separator: ",\n") + "\n]}\n"
        try replace(jwksPath, Array(text.utf8), mode: 0o644)
        return Written(keyID: kid, privateKeyFile: privatePath, jwksFile: jwksPath, keysInSet: entries.count)
    }

    /// A holder's public key (issue --holder-key): a PEM public key or a JWK, not writable by others; or a
    /// private key from keygen (mode 0600), whose public half is taken.
    public static func loadHolderPublicKey(_ path: String) throws(KeyFileError) -> PublicKey {
        let bytes = try KeyFileReader.read(path, .publicKey)
        // A JWK (what deploy/wallet shows as "Your holder key"): {"kty": "EC", "crv": "P-256", "x", "y"} or OKP Ed25519.
        if let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }), first == UInt8(ascii: "{") {
            let value: JSONValue
            do throws(JSONParseError) {
                value = try JSONValue.parse(bytes, maxBytes: 4096, maxDepth: 4)
            } catch {
                throw KeyFileError(file: path, "not a JWK: \(error)")
            }
            guard let jwk = value.objectValue, let cnf = JSONObject([("jwk", JSONValue.object(jwk))]) else {
                throw KeyFileError(file: path, "not a JWK (a JSON object with kty, crv, x and, for P-256, y)")
            }
            do throws(Refusal) {
                return try HolderKey.parse(.object(cnf))
            } catch {
                throw KeyFileError(file: path, "not a holder key: \(error.detail)")
            }
        }
        if CredentialKeySet.occurrences(of: Array("PRIVATE KEY-----".utf8), in: bytes) > 0 {
            let key = try loadPrivateKey(path)
            do throws(CryptoError) {
                return try key.publicKey()
            } catch {
                throw KeyFileError(file: path, error.detail)
            }
        }
        do throws(CryptoError) {
            return try PublicKey.fromPEM(bytes, subject: path)
        } catch {
            throw KeyFileError(file: path, error.detail)
        }
    }

    /// Loads an unencrypted PEM private key (issue --key): mode 0600 or 0400, owned by root or this user.
    public static func loadPrivateKey(_ path: String) throws(KeyFileError) -> PrivateKey {
        let bytes = try KeyFileReader.read(path, .privateKey)
        do throws(CryptoError) {
            return try PrivateKey.fromPEM(bytes, subject: path)
        } catch {
            throw KeyFileError(file: path, error.detail)
        }
    }

    /// Creates `path`, which must not exist, whole or not at all, even across a power cut
    /// (`AtomicFile.create`: `.NAME.tmp`, fsync, hard link, directory fsync; a link never replaces a key).
    static func createWhole(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(KeyFileError) {
        do throws(AtomicFile.Failure) {
            try AtomicFile.create(path, with: bytes, mode: mode)
        } catch {
            throw keyFileError(path, error)
        }
    }

    /// Replaces `path` atomically (`AtomicFile.replace`: PATH.tmp, fsync, rename, fsync of the directory).
    static func replace(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(KeyFileError) {
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(path, with: bytes, mode: mode)
        } catch {
            throw keyFileError(path, error)
        }
    }

    static func keyFileError(_ path: String, _ failure: AtomicFile.Failure) -> KeyFileError {
        if failure.exists { return KeyFileError(file: path, "exists already; not overwritten") }
        let e = failure.error
        return KeyFileError(file: e.subject, "\(e.operation): \(e.errno)")
    }
}

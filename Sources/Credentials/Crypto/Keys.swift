import COpenSSL
import Core
import Settings

/// A public key that verifies passes: Ed25519 or P-256. Owns its `EVP_PKEY` and frees it once.
///
/// Immutable after creation. OpenSSL 3 allows one `EVP_PKEY` to be used by several threads at once
/// as long as nobody modifies it (openssl-threads(7)); each verify makes its own `EVP_MD_CTX`.
public final class PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let algorithm: SignatureAlgorithm

    private init(owning pkey: OpaquePointer, algorithm: SignatureAlgorithm) {
        self.pkey = pkey
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(pkey) }

    /// An Ed25519 key from its 32 raw bytes (a JWK's `x`, RFC 8037).
    public static func ed25519(x: [UInt8], subject: String) throws(CryptoError) -> PublicKey {
        guard x.count == 32 else {
            throw CryptoError("Ed25519 key", subject, "x is \(x.count) bytes; an Ed25519 public key is 32")
        }
        let key = x.withUnsafeBufferPointer { EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }
        guard let key else { throw CryptoError.fromQueue("EVP_PKEY_new_raw_public_key(Ed25519)", subject) }
        return PublicKey(owning: key, algorithm: .ed25519)
    }

    /// A P-256 key from its affine coordinates (a JWK's `x` and `y`, 32 bytes each: RFC 7518 §6.2.1
    /// requires the full length). The point is checked to be on the curve and not the identity.
    public static func p256(x: [UInt8], y: [UInt8], subject: String) throws(CryptoError) -> PublicKey {
        guard x.count == 32, y.count == 32 else {
            throw CryptoError("P-256 key", subject, "x is \(x.count) and y \(y.count) bytes; each must be 32")
        }
        let point = [0x04] + x + y   // SEC 1 uncompressed point
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.fromQueue("OSSL_PARAM_BLD_new", subject) }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps pointers to the parameter names and values until OSSL_PARAM_BLD_to_param
        // copies them (OpenSSL expects names to be C literals), so all of them stay alive, in these
        // closures, until then.
        let groupKey = Array(OSSL_PKEY_PARAM_GROUP_NAME.utf8CString)
        let publicKey = Array(OSSL_PKEY_PARAM_PUB_KEY.utf8CString)
        let group = Array("prime256v1".utf8CString)
        let built: UnsafeMutablePointer<OSSL_PARAM>? = groupKey.withUnsafeBufferPointer { groupName in
            publicKey.withUnsafeBufferPointer { publicName in
                group.withUnsafeBufferPointer { name in
                    point.withUnsafeBufferPointer { pub in
                        guard OSSL_PARAM_BLD_push_utf8_string(builder, groupName.baseAddress, name.baseAddress, 0) == 1,
                              OSSL_PARAM_BLD_push_octet_string(builder, publicName.baseAddress, pub.baseAddress, pub.count) == 1 else {
                            return nil
                        }
                        return OSSL_PARAM_BLD_to_param(builder)
                    }
                }
            }
        }
        guard let params = built else { throw CryptoError.fromQueue("OSSL_PARAM_BLD (P-256 public key)", subject) }
        defer { OSSL_PARAM_free(params) }
        let context = try KeyContext(name: "EC", subject)
        guard EVP_PKEY_fromdata_init(context.pointer) == 1 else { throw CryptoError.fromQueue("EVP_PKEY_fromdata_init", subject) }
        var key: OpaquePointer?
        let selection = Int32(OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS
                              | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS)
        guard EVP_PKEY_fromdata(context.pointer, &key, selection, params) == 1, let key else {
            throw CryptoError("P-256 key", subject, "the point (x, y) is not on the P-256 curve (\(OpenSSLErrors.drain()))")
        }
        let made = PublicKey(owning: key, algorithm: .es256)
        try made.checkPoint(subject)
        return made
    }

    /// A SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`) holding an Ed25519 or P-256 key.
    public static func fromPEM(_ pem: [UInt8], subject: String) throws(CryptoError) -> PublicKey {
        let bio = try MemoryBIO(reading: pem, subject)
        guard let key = PEM_read_bio_PUBKEY(bio.pointer, nil, refusePassphrase, nil) else {
            throw CryptoError("PEM public key", subject,
                              "not a PEM public key (-----BEGIN PUBLIC KEY-----): \(OpenSSLErrors.drain())")
        }
        let algorithm: SignatureAlgorithm
        do throws(CryptoError) {
            algorithm = try Self.algorithm(of: key, subject)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        let made = PublicKey(owning: key, algorithm: algorithm)
        if algorithm == .es256 { try made.checkPoint(subject) }
        return made
    }

    /// The key type libcrypto read: Ed25519, or EC on P-256; anything else is refused with its name.
    static func algorithm(of key: OpaquePointer, _ subject: String) throws(CryptoError) -> SignatureAlgorithm {
        let id = EVP_PKEY_get_base_id(key)
        if id == EVP_PKEY_ED25519 { return .ed25519 }
        if id == EVP_PKEY_EC {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
                throw CryptoError.fromQueue("EVP_PKEY_get_group_name", subject)
            }
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard group == "prime256v1" || group == "P-256" else {
                throw CryptoError("EC key", subject, "is on curve \(group); only P-256 (ES256) is supported")
            }
            return .es256
        }
        let typeName = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "type \(id)"
        throw CryptoError("key", subject, "is a \(typeName) key; only Ed25519 and P-256 keys are supported")
    }

    /// EVP_PKEY_public_check: on the curve, not the point at infinity, of the right order.
    private func checkPoint(_ subject: String) throws(CryptoError) {
        let context = try KeyContext(key: pkey, subject)
        guard EVP_PKEY_public_check(context.pointer) == 1 else {
            throw CryptoError("P-256 key", subject, "the public point fails validation (\(OpenSSLErrors.drain()))")
        }
    }

    /// Verifies `signature` over `message`: Ed25519 (64 bytes, RFC 8032) or ES256 as JOSE/COSE carry it
    /// (r||s, 64 bytes). A signature of any other length is false. Throws only when libcrypto itself fails.
    public func verify(signature: [UInt8], message: [UInt8]) throws(CryptoError) -> Bool {
        let context = try DigestContext("verify")
        let digest: OpaquePointer? = algorithm == .es256 ? EVP_sha256() : nil
        guard EVP_DigestVerifyInit(context.pointer, nil, digest, nil, pkey) == 1 else {
            throw CryptoError.fromQueue("EVP_DigestVerifyInit", algorithm.rawValue)
        }
        let encoded: [UInt8]
        switch algorithm {
        case .ed25519:
            guard signature.count == 64 else { return false }
            encoded = signature
        case .es256:
            guard let der = ECDSASignature.der(fromRaw: signature) else {
                OpenSSLErrors.clear()
                return false
            }
            encoded = der
        }
        let result = encoded.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context.pointer, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        // 1: valid; 0: does not verify; < 0: malformed (r or s out of range, for instance). Only 1 passes.
        if result != 1 { OpenSSLErrors.clear() }
        return result == 1
    }

    /// The members a JWK of this key carries besides kid/alg/use (RFC 8037 §2, RFC 7518 §6.2.1), in the
    /// lexicographic order RFC 7638 thumbprints use.
    public func jwkMembers() throws(CryptoError) -> [(String, String)] {
        switch algorithm {
        case .ed25519:
            var raw = [UInt8](repeating: 0, count: 32)
            var length = raw.count
            guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
                throw CryptoError.fromQueue("EVP_PKEY_get_raw_public_key", "Ed25519 key")
            }
            return [("crv", "Ed25519"), ("kty", "OKP"), ("x", Base64.urlEncode(raw))]
        case .es256:
            let x = try coordinate(OSSL_PKEY_PARAM_EC_PUB_X)
            let y = try coordinate(OSSL_PKEY_PARAM_EC_PUB_Y)
            return [("crv", "P-256"), ("kty", "EC"), ("x", Base64.urlEncode(x)), ("y", Base64.urlEncode(y))]
        }
    }

    private func coordinate(_ name: String) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else {
            throw CryptoError.fromQueue("EVP_PKEY_get_bn_param(\(name))", "P-256 key")
        }
        defer { BN_free(number) }
        var out = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(number, &out, 32) == 32 else { throw CryptoError.fromQueue("BN_bn2binpad", "P-256 key") }
        return out
    }

    /// RFC 7638 JWK thumbprint: SHA-256 over the required members in lexicographic order, no spaces.
    public func thumbprint() throws(CryptoError) -> [UInt8] {
        let members = try jwkMembers()
        let canonical = "{" + members.map { JSONText.string($0.0) + ":" + JSONText.string($0.1) }.joined(separator: ",") + "}"
        return try CryptoDigest.sha256(Array(canonical.utf8))
    }

    /// The kid `scangate credential keygen` and `issue` give a key when none is chosen: the first 6 bytes of
    /// its RFC 7638 thumbprint in base64url (8 characters; short, so a CWT still fits QR version 7). A kid
    /// only selects a key (a key set refuses two keys with one kid), so 48 bits are plenty.
    public func defaultKeyID() throws(CryptoError) -> String {
        Base64.urlEncode(Array(try thumbprint().prefix(6)))
    }
}

/// A private key that signs passes (`scangate credential issue`, tests, the bench). Owns its `EVP_PKEY`.
public final class PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let algorithm: SignatureAlgorithm

    private init(owning pkey: OpaquePointer, algorithm: SignatureAlgorithm) {
        self.pkey = pkey
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A new key from libcrypto's generator.
    public static func generate(_ algorithm: SignatureAlgorithm) throws(CryptoError) -> PrivateKey {
        let context = try KeyContext(name: algorithm == .ed25519 ? "ED25519" : "EC", "key generation")
        guard EVP_PKEY_keygen_init(context.pointer) == 1 else { throw CryptoError.fromQueue("EVP_PKEY_keygen_init", algorithm.rawValue) }
        if algorithm == .es256 {
            guard EVP_PKEY_CTX_set_group_name(context.pointer, "P-256") == 1 else {
                throw CryptoError.fromQueue("EVP_PKEY_CTX_set_group_name(P-256)", "key generation")
            }
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context.pointer, &key) == 1, let key else {
            throw CryptoError.fromQueue("EVP_PKEY_generate", algorithm.rawValue)
        }
        return PrivateKey(owning: key, algorithm: algorithm)
    }

    /// A PKCS#8 (`-----BEGIN PRIVATE KEY-----`) or traditional EC PEM, unencrypted; an encrypted key
    /// is refused (nothing prompts for a passphrase).
    public static func fromPEM(_ pem: [UInt8], subject: String) throws(CryptoError) -> PrivateKey {
        let bio = try MemoryBIO(reading: pem, subject)
        guard let key = PEM_read_bio_PrivateKey(bio.pointer, nil, refusePassphrase, nil) else {
            throw CryptoError("PEM private key", subject,
                              "not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----): \(OpenSSLErrors.drain())")
        }
        do throws(CryptoError) {
            return PrivateKey(owning: key, algorithm: try PublicKey.algorithm(of: key, subject))
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
    }

    /// The key as unencrypted PKCS#8 PEM, for a file with mode 0600.
    public func pkcs8PEM() throws(CryptoError) -> [UInt8] {
        let bio = try MemoryBIO(writing: "private key")
        guard PEM_write_bio_PrivateKey(bio.pointer, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.fromQueue("PEM_write_bio_PrivateKey", algorithm.rawValue)
        }
        return bio.contents()
    }

    /// The matching public key, as a SubjectPublicKeyInfo PEM.
    public func publicPEM() throws(CryptoError) -> [UInt8] {
        let bio = try MemoryBIO(writing: "public key")
        guard PEM_write_bio_PUBKEY(bio.pointer, pkey) == 1 else {
            throw CryptoError.fromQueue("PEM_write_bio_PUBKEY", algorithm.rawValue)
        }
        return bio.contents()
    }

    /// The matching public key.
    public func publicKey() throws(CryptoError) -> PublicKey {
        try PublicKey.fromPEM(try publicPEM(), subject: "the public half of a \(algorithm.rawValue) key")
    }

    /// Signs `message`: Ed25519 (64 bytes) or ES256 as r||s (64 bytes), as JOSE and COSE carry it.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = try DigestContext("sign")
        let digest: OpaquePointer? = algorithm == .es256 ? EVP_sha256() : nil
        guard EVP_DigestSignInit(context.pointer, nil, digest, nil, pkey) == 1 else {
            throw CryptoError.fromQueue("EVP_DigestSignInit", algorithm.rawValue)
        }
        var length = 0
        guard message.withUnsafeBufferPointer({
            EVP_DigestSign(context.pointer, nil, &length, $0.baseAddress, $0.count)
        }) == 1 else { throw CryptoError.fromQueue("EVP_DigestSign (length)", algorithm.rawValue) }
        var signature = [UInt8](repeating: 0, count: length)
        guard message.withUnsafeBufferPointer({ msg in
            EVP_DigestSign(context.pointer, &signature, &length, msg.baseAddress, msg.count)
        }) == 1 else { throw CryptoError.fromQueue("EVP_DigestSign", algorithm.rawValue) }
        signature.removeSubrange(length...)
        switch algorithm {
        case .ed25519:
            return signature
        case .es256:
            guard let raw = ECDSASignature.raw(fromDER: signature) else {
                throw CryptoError("ES256 signature", "DER from libcrypto", "does not convert to r||s")
            }
            return raw
        }
    }
}

/// PEM passphrase callback that supplies none: an encrypted key fails to load instead of prompting on the
/// terminal (OpenSSL's default callback would read /dev/tty).
private let refusePassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in
    -1
}

import COpenSSL

/// A libcrypto call that failed: the operation, what it was about (a key file, a kid), and what
/// OpenSSL's error queue said.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let subject: String
    public let detail: String

    public init(_ operation: String, _ subject: String, _ detail: String) {
        self.operation = operation
        self.subject = subject
        self.detail = detail
    }

    /// An error from the call just made: its detail is the thread's OpenSSL error queue (then emptied).
    static func fromQueue(_ operation: String, _ subject: String) -> CryptoError {
        CryptoError(operation, subject, OpenSSLErrors.drain())
    }

    public var description: String { "\(operation) \(subject): \(detail)" }
}

enum OpenSSLErrors {
    /// The thread's OpenSSL error queue as one line (at most four entries), and the queue emptied.
    static func drain() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            guard parts.count < 4 else { continue }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return parts.isEmpty ? "OpenSSL gave no reason" : parts.joined(separator: "; ")
    }

    /// Empties the queue after a call whose failure is an expected answer (a signature that does not verify).
    static func clear() { ERR_clear_error() }
}

/// SHA-256 and the system's random source, through libcrypto.
public enum CryptoDigest {
    public static func sha256(_ bytes: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        }
        guard ok == 1, length == 32 else { throw CryptoError.fromQueue("EVP_Digest(SHA-256)", "\(bytes.count) bytes") }
        return out
    }

    /// `count` bytes from RAND_bytes (the kernel's CSPRNG through OpenSSL's DRBG).
    public static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else {
            throw CryptoError.fromQueue("RAND_bytes", "\(count) bytes")
        }
        return out
    }
}

/// Owns one `EVP_MD_CTX` for one sign or verify call.
final class DigestContext {
    let pointer: OpaquePointer

    init(_ subject: String) throws(CryptoError) {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError.fromQueue("EVP_MD_CTX_new", subject) }
        pointer = ctx
    }

    deinit { EVP_MD_CTX_free(pointer) }
}

/// Owns one `EVP_PKEY_CTX`.
final class KeyContext {
    let pointer: OpaquePointer

    init(name: String, _ subject: String) throws(CryptoError) {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, name, nil) else {
            throw CryptoError.fromQueue("EVP_PKEY_CTX_new_from_name(\(name))", subject)
        }
        pointer = ctx
    }

    init(key: OpaquePointer, _ subject: String) throws(CryptoError) {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            throw CryptoError.fromQueue("EVP_PKEY_CTX_new_from_pkey", subject)
        }
        pointer = ctx
    }

    deinit { EVP_PKEY_CTX_free(pointer) }
}

/// Owns a memory BIO.
final class MemoryBIO {
    let pointer: OpaquePointer
    /// Keeps the bytes a read-only BIO points into alive.
    private let storage: UnsafeMutableBufferPointer<UInt8>?

    /// A read-only BIO over a copy of `bytes`.
    init(reading bytes: [UInt8], _ subject: String) throws(CryptoError) {
        let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, bytes.count))
        _ = copy.initialize(from: bytes)
        guard let bio = BIO_new_mem_buf(copy.baseAddress, Int32(bytes.count)) else {
            copy.deallocate()
            throw CryptoError.fromQueue("BIO_new_mem_buf", subject)
        }
        pointer = bio
        storage = copy
    }

    /// An empty BIO to write into.
    init(writing subject: String) throws(CryptoError) {
        guard let method = BIO_s_mem(), let bio = BIO_new(method) else {
            throw CryptoError.fromQueue("BIO_new(BIO_s_mem)", subject)
        }
        pointer = bio
        storage = nil
    }

    /// Everything written so far.
    func contents() -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { BIO_read(pointer, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += chunk[0..<Int(n)]
        }
        return out
    }

    deinit {
        BIO_free(pointer)
        storage?.deallocate()
    }
}

/// Converts between the JOSE/COSE ECDSA signature (r || s, 32 bytes each, RFC 7518 §3.4, RFC 9053 §2.1)
/// and the DER `ECDSA-Sig-Value` libcrypto signs and verifies.
enum ECDSASignature {
    static let componentLength = 32

    /// DER for a raw r||s; nil unless it is exactly 64 bytes (no other length is canonical).
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * componentLength else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(componentLength), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + componentLength, Int32(componentLength), nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard written == length else { return nil }
        return out
    }

    /// r||s for a DER signature; nil unless the DER parses completely and r and s fit 32 bytes.
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            guard let signature else { return nil }
            guard let end = cursor, let start = buffer.baseAddress, end - start == buffer.count else {
                ECDSA_SIG_free(signature)
                return nil
            }
            return signature
        }
        guard let signature = parsed else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else { return nil }
        var out = [UInt8](repeating: 0, count: 2 * componentLength)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            BN_bn2binpad(r, buffer.baseAddress, Int32(componentLength)) == Int32(componentLength)
                && BN_bn2binpad(s, buffer.baseAddress! + componentLength, Int32(componentLength)) == Int32(componentLength)
        }
        return ok ? out : nil
    }
}

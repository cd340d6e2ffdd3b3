import COpenSSL

/// A 16-byte AES-128 key (an SCBK or a session key). Never printed: its description names no byte.
public struct OSDPKey: Equatable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// SCBK-D, the default key of install mode (0x30 ... 0x3F).
    public static let installDefault = OSDPKey(bytes: OSDPWire.defaultKeyBytes)!

    public var description: String { "AES-128 key (16 bytes, not shown)" }
}

/// A libcrypto failure: which call, and OpenSSL's own reason.
public struct OSDPCryptoError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let reason: String

    init(_ operation: String) {
        self.operation = operation
        let code = ERR_get_error()
        if code == 0 {
            reason = "no OpenSSL error queued"
        } else {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
    }

    public var description: String { "libcrypto \(operation): \(reason)" }
}

/// AES-128 through libcrypto's EVP interface, without padding: single-block ECB and CBC over whole
/// blocks, the three operations the OSDP secure channel needs. Owns one EVP_CIPHER_CTX, freed in deinit;
/// used from one thread at a time (the link thread owns its PD and so its cipher).
public final class AES128 {
    private let context: OpaquePointer

    public init() throws(OSDPCryptoError) {
        guard let context = EVP_CIPHER_CTX_new() else { throw OSDPCryptoError("EVP_CIPHER_CTX_new") }
        self.context = context
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// AES-ECB of one 16-byte block.
    public func encryptBlock(_ block: [UInt8], key: OSDPKey) throws(OSDPCryptoError) -> [UInt8] {
        precondition(block.count == 16, "AES block of \(block.count) bytes")
        return try run(cipher: EVP_aes_128_ecb(), encrypt: true, key: key, iv: nil, data: block)
    }

    /// AES-CBC encryption of whole blocks (no padding is added).
    public func encryptCBC(_ data: [UInt8], key: OSDPKey, iv: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        precondition(data.count % 16 == 0 && iv.count == 16, "CBC of \(data.count) bytes")
        return try run(cipher: EVP_aes_128_cbc(), encrypt: true, key: key, iv: iv, data: data)
    }

    /// AES-CBC decryption of whole blocks (no padding is removed).
    public func decryptCBC(_ data: [UInt8], key: OSDPKey, iv: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        precondition(data.count % 16 == 0 && iv.count == 16, "CBC of \(data.count) bytes")
        return try run(cipher: EVP_aes_128_cbc(), encrypt: false, key: key, iv: iv, data: data)
    }

    private func run(cipher: OpaquePointer?, encrypt: Bool, key: OSDPKey, iv: [UInt8]?,
                     data: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        guard !data.isEmpty else { return [] }
        let initialised = key.bytes.withUnsafeBufferPointer { k in
            if let iv {
                return iv.withUnsafeBufferPointer { v in
                    EVP_CipherInit_ex(context, cipher, nil, k.baseAddress, v.baseAddress, encrypt ? 1 : 0)
                }
            }
            return EVP_CipherInit_ex(context, cipher, nil, k.baseAddress, nil, encrypt ? 1 : 0)
        }
        guard initialised == 1 else { throw OSDPCryptoError("EVP_CipherInit_ex") }
        guard EVP_CIPHER_CTX_set_padding(context, 0) == 1 else { throw OSDPCryptoError("EVP_CIPHER_CTX_set_padding") }
        var output = [UInt8](repeating: 0, count: data.count + 16)
        var written: Int32 = 0
        var tail: Int32 = 0
        let updated = output.withUnsafeMutableBufferPointer { out in
            data.withUnsafeBufferPointer { input in
                EVP_CipherUpdate(context, out.baseAddress, &written, input.baseAddress, Int32(input.count))
            }
        }
        guard updated == 1 else { throw OSDPCryptoError("EVP_CipherUpdate") }
        let finished = output.withUnsafeMutableBufferPointer { out in
            EVP_CipherFinal_ex(context, out.baseAddress.map { $0 + Int(written) }, &tail)
        }
        guard finished == 1 else { throw OSDPCryptoError("EVP_CipherFinal_ex") }
        let total = Int(written) + Int(tail)
        guard total == data.count else { throw OSDPCryptoError("AES produced \(total) of \(data.count) bytes") }
        return Array(output[0..<total])
    }
}

/// Random bytes from the system's generator (RAND_bytes): the PD's RND.B.
public enum OSDPRandom {
    public static func bytes(_ count: Int) throws(OSDPCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard rc == 1 else { throw OSDPCryptoError("RAND_bytes") }
        return out
    }
}

/// SHA-256 (EVP_Digest), for the serial number derived from /etc/machine-id.
enum OSDPDigest {
    static func sha256(_ data: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let rc = out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { d in
                EVP_Digest(d.baseAddress, d.count, o.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard rc == 1, length == 32 else { throw OSDPCryptoError("EVP_Digest(SHA-256)") }
        return out
    }
}

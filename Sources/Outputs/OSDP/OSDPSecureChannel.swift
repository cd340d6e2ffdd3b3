/// The three session keys derived from an SCBK and the CP's random number.
public struct OSDPSessionKeys: Equatable, Sendable {
    public let encryption: OSDPKey
    public let mac1: OSDPKey
    public let mac2: OSDPKey
}

/// The secure channel's computations (SIA OSDP 2.2 Annex D), on AES-128 from libcrypto:
/// - S-ENC, S-MAC1, S-MAC2 = AES-ECB(SCBK, `01 82` / `01 01` / `01 02` ‖ RND.A[0..5] ‖ 00×8)
/// - client cryptogram (PD → CP, in osdp_CCRYPT) = AES-ECB(S-ENC, RND.A ‖ RND.B)
/// - server cryptogram (CP → PD, in osdp_SCRYPT) = AES-ECB(S-ENC, RND.B ‖ RND.A)
/// - initial reply MAC (osdp_RMAC_I) = AES-ECB(S-MAC2, AES-ECB(S-MAC1, server cryptogram))
/// - MAC = CBC over the message (SOM to the end of the data) with S-MAC1 for every block but the last and
///   S-MAC2 for the last, padded 0x80 00… when it is not whole blocks; the IV is the other side's last
///   MAC (a command's MAC chains from the last reply MAC, a reply's from that command's MAC)
/// - data after the code byte = AES-CBC(S-ENC, IV = NOT(that same chained MAC)), padded 0x80 00…
public struct OSDPSecureChannelCrypto {
    let aes: AES128

    public init(aes: AES128) { self.aes = aes }

    public func sessionKeys(scbk: OSDPKey, rndA: [UInt8]) throws(OSDPCryptoError) -> OSDPSessionKeys {
        func derive(_ a: UInt8, _ b: UInt8) throws(OSDPCryptoError) -> OSDPKey {
            let block = [a, b] + rndA.prefix(6) + [UInt8](repeating: 0, count: 8)
            return OSDPKey(bytes: try aes.encryptBlock(block, key: scbk))!
        }
        return OSDPSessionKeys(encryption: try derive(0x01, 0x82), mac1: try derive(0x01, 0x01),
                               mac2: try derive(0x01, 0x02))
    }

    public func clientCryptogram(_ keys: OSDPSessionKeys, rndA: [UInt8], rndB: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        try aes.encryptBlock(rndA + rndB, key: keys.encryption)
    }

    public func serverCryptogram(_ keys: OSDPSessionKeys, rndA: [UInt8], rndB: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        try aes.encryptBlock(rndB + rndA, key: keys.encryption)
    }

    public func initialReplyMAC(_ keys: OSDPSessionKeys, serverCryptogram: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        try aes.encryptBlock(try aes.encryptBlock(serverCryptogram, key: keys.mac1), key: keys.mac2)
    }

    /// The full 16-byte MAC value of `message` chained from `iv` (the wire carries its first 4 bytes).
    public func mac(_ keys: OSDPSessionKeys, iv: [UInt8], message: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        let padded = message.count % 16 == 0 && !message.isEmpty ? message : Self.pad(message)
        let head = Array(padded.dropLast(16))
        let chain = head.isEmpty ? iv : Array(try aes.encryptCBC(head, key: keys.mac1, iv: iv).suffix(16))
        return try aes.encryptCBC(Array(padded.suffix(16)), key: keys.mac2, iv: chain)
    }

    /// Encrypts a data block: pads it (0x80 00…) and runs AES-CBC with IV = NOT(chained).
    public func encrypt(_ keys: OSDPSessionKeys, chained: [UInt8], data: [UInt8]) throws(OSDPCryptoError) -> [UInt8] {
        try aes.encryptCBC(Self.pad(data), key: keys.encryption, iv: chained.map { ~$0 })
    }

    /// Decrypts a data block and removes its padding; nil when the block is not whole AES blocks or the
    /// padding is not 0x80 00… (a forged or mangled block).
    public func decrypt(_ keys: OSDPSessionKeys, chained: [UInt8], data: [UInt8]) throws(OSDPCryptoError) -> [UInt8]? {
        guard !data.isEmpty, data.count % 16 == 0 else { return nil }
        var plain = try aes.decryptCBC(data, key: keys.encryption, iv: chained.map { ~$0 })
        while let last = plain.last, last == 0 { plain.removeLast() }
        guard plain.last == 0x80 else { return nil }
        plain.removeLast()
        return plain
    }

    /// 0x80, then zeros up to whole 16-byte blocks.
    static func pad(_ data: [UInt8]) -> [UInt8] {
        var out = data
        out.append(0x80)
        while out.count % 16 != 0 { out.append(0) }
        return out
    }

    /// Compares without an early exit (MACs, cryptograms).
    static func constantTimeEqual<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// Where the PD's secure channel stands.
enum OSDPChannelState {
    /// No session: plain frames only (or NAK 06 when the channel is required).
    case inactive
    /// CHLNG was answered with CCRYPT; waiting for the CP's SCRYPT.
    case challenged(OSDPHandshake)
    /// RMAC_I was sent: every frame carries a MAC.
    case active(OSDPSession)

    var isActive: Bool { if case .active = self { return true } else { return false } }
}

struct OSDPHandshake {
    let keys: OSDPSessionKeys
    let rndA: [UInt8]
    let rndB: [UInt8]
    /// The CHLNG's key selector: 0 SCBK-D, 1 SCBK.
    let keySelector: UInt8
}

struct OSDPSession {
    let keys: OSDPSessionKeys
    /// The last reply MAC (16 bytes): the next command's MAC chains from it.
    var replyMAC: [UInt8]
    /// This command's MAC (16 bytes): the reply's MAC chains from it.
    var commandMAC: [UInt8]
    /// True when the session runs on SCBK-D (install mode).
    let usesDefaultKey: Bool
}

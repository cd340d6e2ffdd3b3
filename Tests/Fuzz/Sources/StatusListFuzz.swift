import Core
import Platform
import Credentials
import Settings

/// Token Status Lists on hostile input: zlib inflate (bounded), the list's bit unpacking, the status list
/// token's claims, and the whole token through the verifier with the fuzz key set.
enum StatusListFuzz {
    /// The input is read three ways:
    /// - as zlib data: inflated with a small limit and a large one, which agree (the small one succeeds
    ///   exactly when the output fits it, with the same bytes), and never return more than the limit;
    /// - as `bits` (the first byte picks 1, 2, 4, 8 or a wrong value) and a compressed list (the rest,
    ///   base64url-encoded as `lst`): a decoded list has one entry per `bits` of its bytes, each read back
    ///   below 2^bits, and none past its end;
    /// - as status list token claims, JSON and CWT (CBOR), and as a whole token in either form (a first byte
    ///   of 0x80 or more, or hex text, is the CWT form): never verifies (no private key here); the form is
    ///   told from the bytes as StatusListEncoding says (binary as is, hex two digits a byte, else JWT).
    @Sendable static func run(_ bytes: [UInt8]) {
        let small = 1024
        let a = Result { () throws(ZlibError) in try ZlibInflate.inflate(bytes, maxOutput: small) }
        let b = Result { () throws(ZlibError) in try ZlibInflate.inflate(bytes, maxOutput: 1 << 20) }
        switch (a, b) {
        case (.success(let x), .success(let y)):
            require(x == y && x.count <= small, "the two limits inflate to the same bytes, within the small one")
        case (.success, .failure(let e)):
            require(false, "fits 1 KiB but not 1 MiB: \(e)")
        case (.failure(let e), .success(let y)):
            require(e.operation == "limit" && y.count > small, "refused under 1 KiB (\(e)) but inflates to \(y.count) bytes")
        case (.failure, .failure):
            break
        }
        if case .success(let y) = b { require(y.count <= 1 << 20, "never past the limit") }

        if let first = bytes.first {
            let choices = [1, 2, 4, 8, 0, 3, 16]
            let bits = choices[Int(first) % choices.count]
            let lst = Base64.urlEncode(Array(bytes.dropFirst()))
            if case .success(let list) = Result(catching: { () throws(StatusListError) in try StatusList.decode(bits: bits, lst: lst) }) {
                require([1, 2, 4, 8].contains(bits), "bits \(bits) accepted")
                require(!list.bytes.isEmpty && list.bytes.count <= StatusList.maxBytes, "\(list.bytes.count) bytes")
                require(list.count == list.bytes.count * 8 / bits, "count \(list.count)")
                for index in [0, 1, list.count / 2, list.count - 1] {
                    guard let status = list.status(at: index) else { require(false, "no status at \(index) of \(list.count)"); return }
                    require(Int(status) < 1 << bits, "status \(status) at \(index) with \(bits) bits")
                }
                require(list.status(at: list.count) == nil && list.status(at: -1) == nil, "nothing beyond the list")
            }
        }

        if case .success(let claims) = Result(catching: { () throws(StatusListError) in try StatusListToken.claims(bytes) }) {
            require(!claims.uri.isEmpty && claims.expiresAt > claims.issuedAt, "sub and times")
            require(claims.ttl.map { $0 > 0 } ?? true, "ttl positive")
        }
        if case .success(let claims) = Result(catching: { () throws(StatusListError) in try StatusListToken.cwtClaims(bytes) }) {
            require(!claims.uri.isEmpty && claims.expiresAt > claims.issuedAt, "CWT sub and times")
            require(claims.ttl.map { $0 > 0 } ?? true, "CWT ttl positive")
            require(!claims.list.bytes.isEmpty && claims.list.bytes.count <= StatusList.maxBytes, "CWT list \(claims.list.bytes.count) bytes")
        }
        switch Result(catching: { () throws(StatusListError) in try StatusListEncoding.detect(bytes) }) {
        case .success(.cwt(let cbor, hex: false)):
            require(cbor == bytes && (bytes.first ?? 0) >= 0x80, "binary CWT is the input as it is")
        case .success(.cwt(let cbor, hex: true)):
            let digits = bytes.filter { Hex.value($0) != nil }
            require(cbor.count * 2 == digits.count && Hex.string(cbor, lowercase: true) == String(decoding: digits, as: UTF8.self).lowercased(),
                    "hex CWT decodes two digits a byte")
        case .success(.jwt(let text)):
            require(text.count <= bytes.count && (bytes.first ?? 0) < 0x80, "JWT text is within the input")
        case .failure(let e):
            require(e.message.contains("an odd number"), "only odd hex is refused before parsing: \(e)")
        }
        let verified = Result { () throws(StatusListError) in
            try StatusListToken.verify(bytes, keys: CredentialFuzz.keys, algorithms: [.ed25519, .es256])
        }
        if case .success = verified { require(false, "a status list token verified without a private key") }
    }
}

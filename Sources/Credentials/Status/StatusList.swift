import Core

/// Why a status list cannot be used: one line naming what was wrong (never the token).
public struct StatusListError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A Token Status List (draft-ietf-oauth-status-list, "Status List"): `bits` (1, 2, 4 or 8) per
/// referenced token, packed into bytes from the least significant bit up: entry 0 is the lowest `bits`
/// of byte 0, entry 1 the next, and so on. In JSON, `lst` is the base64url (no padding) of the
/// zlib-compressed (RFC 1950/1951) bytes. Status values: 0 VALID, 1 INVALID, 2 SUSPENDED, 3 and up
/// application-specific; every value but 0 refuses a pass here.
public struct StatusList: Equatable, Sendable {
    public let bits: Int
    public let bytes: [UInt8]

    /// The most bytes a list may inflate to: 16 MiB, 134 million 1-bit entries (a zip bomb stops here).
    public static let maxBytes = 16 << 20
    public static let allowedBits = [1, 2, 4, 8]

    public init(bits: Int, bytes: [UInt8]) throws(StatusListError) {
        guard Self.allowedBits.contains(bits) else {
            throw StatusListError("status_list.bits is \(bits); it must be 1, 2, 4 or 8")
        }
        self.bits = bits
        self.bytes = bytes
    }

    /// How many entries the bytes hold.
    public var count: Int { bytes.count * (8 / bits) }

    /// The status at `index`, nil beyond the list.
    public func status(at index: Int) -> UInt8? {
        guard index >= 0, index < count else { return nil }
        let perByte = 8 / bits
        let byte = bytes[index / perByte]
        let shift = (index % perByte) * bits
        let mask = UInt8(truncatingIfNeeded: (1 << bits) - 1)
        return (byte >> UInt8(shift)) & mask
    }

    /// `bits` and `lst` as a status list token carries them: `lst` base64url without padding, then inflated
    /// (bounded by maxBytes).
    public static func decode(bits: Int, lst: String) throws(StatusListError) -> StatusList {
        guard allowedBits.contains(bits) else { throw StatusListError("status_list.bits is \(bits); it must be 1, 2, 4 or 8") }
        guard !lst.isEmpty else { throw StatusListError("status_list.lst is empty") }
        guard let compressed = Base64.urlDecode(lst) else {
            throw StatusListError("status_list.lst is not base64url without padding")
        }
        return try decode(bits: bits, compressed: compressed)
    }

    /// `bits` and the compressed bytes (CWT: `lst` is a byte string), inflated within maxBytes.
    public static func decode(bits: Int, compressed: [UInt8]) throws(StatusListError) -> StatusList {
        guard allowedBits.contains(bits) else { throw StatusListError("status_list.bits is \(bits); it must be 1, 2, 4 or 8") }
        guard !compressed.isEmpty else { throw StatusListError("status_list.lst is empty") }
        let bytes: [UInt8]
        do throws(ZlibError) {
            bytes = try ZlibInflate.inflate(compressed, maxOutput: maxBytes)
        } catch {
            throw StatusListError("status_list.lst does not inflate: \(error)")
        }
        guard !bytes.isEmpty else { throw StatusListError("status_list.lst inflates to no bytes") }
        return try StatusList(bits: bits, bytes: bytes)
    }

    /// "0 VALID", "1 INVALID", "2 SUSPENDED", "3": for messages.
    public static func describe(_ status: UInt8) -> String {
        switch status {
        case 0: return "0 VALID"
        case 1: return "1 INVALID"
        case 2: return "2 SUSPENDED"
        default: return String(status)
        }
    }
}

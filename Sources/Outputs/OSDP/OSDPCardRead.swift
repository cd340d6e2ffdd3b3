import Core
import Platform

/// A read waiting for the panel's next osdp_POLL, as osdp_RAW will carry it.
public struct OSDPCardRead: Equatable, Sendable {
    /// The ReadEvent's sequence number (logs).
    public var seq: UInt64
    /// osdp_RAW's format code: 0 raw bits (unspecified format), 1 Wiegand (parity, data, parity).
    public var format: UInt8
    public var bitCount: Int
    /// The bits, left-justified in bytes (the first bit is the most significant bit of the first byte).
    public var bytes: [UInt8]
    /// When the read was emitted (monotonic clock): its TTL counts from here.
    public var emittedAt: MonotonicInstant

    public init(seq: UInt64, format: UInt8, bitCount: Int, bytes: [UInt8], emittedAt: MonotonicInstant) {
        self.seq = seq
        self.format = format
        self.bitCount = bitCount
        self.bytes = bytes
        self.emittedAt = emittedAt
    }

    /// The door data's bytes as raw bits: format 0, 8 bits per byte.
    public static func raw(seq: UInt64, bytes: [UInt8], emittedAt: MonotonicInstant) -> OSDPCardRead {
        OSDPCardRead(seq: seq, format: 0, bitCount: bytes.count * 8, bytes: bytes, emittedAt: emittedAt)
    }

    /// Wiegand bits (parity included), format 1, packed most significant bit first.
    public static func wiegand(seq: UInt64, bits: [Bool], emittedAt: MonotonicInstant) -> OSDPCardRead {
        var bytes = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, bit) in bits.enumerated() where bit { bytes[i / 8] |= 0x80 >> UInt8(i % 8) }
        return OSDPCardRead(seq: seq, format: 1, bitCount: bits.count, bytes: bytes, emittedAt: emittedAt)
    }

    /// osdp_RAW's data: reader 0, format, bit count (2 bytes LE), the bytes.
    var rawReplyData: [UInt8] {
        [0, format, UInt8(truncatingIfNeeded: bitCount), UInt8(truncatingIfNeeded: bitCount >> 8)] + bytes
    }

    func ageMilliseconds(at now: MonotonicInstant) -> Double { now.milliseconds(since: emittedAt) }
}

/// Why a read cannot be encoded for OSDP (the Wiegand encoder's answer for a number out of range).
public struct OSDPCardRefusal: Error, Equatable, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

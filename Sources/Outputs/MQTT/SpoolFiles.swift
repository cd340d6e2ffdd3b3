import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// File names and the record layout.
public enum SpoolFiles {
    /// Record header (little-endian), the format written: magic u32 "SGR2", payload length u32, record
    /// number u64, spooled-at wall clock i64 (ns), spooled-at CLOCK_BOOTTIME u64 (ns), the boot id (16
    /// bytes), flags u32 (1: the wall clock was synchronised, 2: the boot id is known), CRC-32 u32 of bytes
    /// 4..<52 and the payload. Then the payload.
    public static let headerSize = 56
    public static let recordMagic: UInt32 = 0x3252_4753
    /// The first format, still read (records spooled by an older scangate): magic u32 "SGR1", payload
    /// length u32, record number u64, spooled-at wall clock i64, CRC-32 u32 of bytes 4..<24 and the payload.
    public static let legacyHeaderSize = 28
    public static let legacyRecordMagic: UInt32 = 0x3152_4753
    static let flagWallSynchronized: UInt32 = 1
    static let flagBootID: UInt32 = 2
    /// Head file: two 24-byte slots, written in turn: magic u32 "SGH1", generation u64, the first
    /// record not yet delivered u64, CRC-32 u32 of bytes 4..<20. The valid slot with the higher generation wins,
    /// so a torn write of one slot leaves the other; the generation goes on from the file's after a reopen.
    public static let headMagic: UInt32 = 0x3148_4753
    public static let headSlotSize = 24
    public static let maxPayload = 256 << 10
    /// The largest segment file the spool ever writes (`SpoolLimits.segmentBytes` is at most 8 MiB; a segment
    /// ends after the record that crosses it). A larger file is not one of ours and is not read.
    public static let maxSegmentFileBytes = (8 << 20) + headerSize + maxPayload

    public static func segmentName(_ first: UInt64) -> String {
        String(decoding: Hex.digits(first, count: 16), as: UTF8.self) + ".seg"
    }

    static func segmentNumber(fromName name: String) -> UInt64? {
        guard name.hasSuffix(".seg"), name.utf8.count == 20 else { return nil }
        let digits = name.utf8.prefix(16)
        guard digits.allSatisfy({ Hex.value($0) != nil && !($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self), radix: 16)
    }

    static func encode(number: UInt64, stamp: SpoolStamp, payload: [UInt8], into out: inout [UInt8]) {
        var header = [UInt8](repeating: 0, count: headerSize)
        put32(&header, 0, recordMagic)
        put32(&header, 4, UInt32(payload.count))
        put64(&header, 8, number)
        put64(&header, 16, UInt64(bitPattern: stamp.wall))
        put64(&header, 24, stamp.boot)
        if let id = stamp.bootID { header.replaceSubrange(32..<48, with: id.bytes) }
        put32(&header, 48, (stamp.wallSynchronized ? flagWallSynchronized : 0) | (stamp.bootID != nil ? flagBootID : 0))
        var crc = header.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[4..<52])) }
        crc = payload.withUnsafeBytes { CRC32.update(crc, $0) }
        put32(&header, 52, crc)
        out += header
        out += payload
    }

    /// A record of the first format ("SGR1"), as an older scangate wrote it.
    static func encodeLegacy(number: UInt64, time: Int64, payload: [UInt8], into out: inout [UInt8]) {
        var header = [UInt8](repeating: 0, count: legacyHeaderSize)
        put32(&header, 0, legacyRecordMagic)
        put32(&header, 4, UInt32(payload.count))
        put64(&header, 8, number)
        put64(&header, 16, UInt64(bitPattern: time))
        var crc = header.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[4..<24])) }
        crc = payload.withUnsafeBytes { CRC32.update(crc, $0) }
        put32(&header, 24, crc)
        out += header
        out += payload
    }

    struct Header {
        /// The header's own size: `headerSize`, or `legacyHeaderSize` for a record of the first format.
        var size: Int
        var length: Int
        var number: UInt64
        var stamp: SpoolStamp
        var crc: UInt32
        var recordSize: Int { size + length }
    }

    /// The header at `offset` of `bytes`, if its magic and length are plausible (either format).
    static func header(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Header? {
        guard offset >= 0, bytes.count - offset >= legacyHeaderSize else { return nil }
        let magic = get32(bytes, offset)
        let length = Int(get32(bytes, offset + 4))
        guard length <= maxPayload else { return nil }
        let number = get64(bytes, offset + 8)
        let wall = Int64(bitPattern: get64(bytes, offset + 16))
        if magic == legacyRecordMagic {
            // The first format had no synchronisation flag: a stamp after 2025 counted as a set clock.
            let stamp = SpoolStamp(wall: wall, wallSynchronized: wall >= SpoolClock.plausibleWallClockFloor, boot: 0, bootID: nil)
            return Header(size: legacyHeaderSize, length: length, number: number, stamp: stamp, crc: get32(bytes, offset + 24))
        }
        guard magic == recordMagic, bytes.count - offset >= headerSize else { return nil }
        let flags = get32(bytes, offset + 48)
        let id = flags & flagBootID != 0 ? BootID(bytes: Array(bytes[(offset + 32)..<(offset + 48)])) : nil
        let stamp = SpoolStamp(wall: wall, wallSynchronized: flags & flagWallSynchronized != 0, boot: get64(bytes, offset + 24), bootID: id)
        return Header(size: headerSize, length: length, number: number, stamp: stamp, crc: get32(bytes, offset + 52))
    }

    /// The checksum of the record at `offset` (header `h`, whose bytes are all in `bytes`).
    static func crcMatches(_ bytes: UnsafeRawBufferPointer, recordAt offset: Int, _ h: Header) -> Bool {
        guard offset + h.recordSize <= bytes.count else { return false }
        var crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + h.size - 4)]))
        crc = CRC32.update(crc, UnsafeRawBufferPointer(rebasing: bytes[(offset + h.size)..<(offset + h.recordSize)]))
        return crc == h.crc
    }

    /// Segment records for `RecordScanner`: a whole record whose magic, length and checksum are valid and
    /// whose number is in `numbers`.
    struct Framing: RecordFraming {
        let numbers: Range<UInt64>
        func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame {
            guard bytes.count - offset >= 4 else { return .incomplete }
            // "SGR" then '1' or '2' (checked first: a resync tries every byte).
            guard bytes[offset] == 0x53, bytes[offset + 1] == 0x47, bytes[offset + 2] == 0x52,
                  bytes[offset + 3] == 0x31 || bytes[offset + 3] == 0x32 else { return .invalid }
            guard let h = header(bytes, at: offset) else { return bytes.count - offset < headerSize ? .incomplete : .invalid }
            guard offset + h.recordSize <= bytes.count else { return .incomplete }
            return numbers.contains(h.number) && crcMatches(bytes, recordAt: offset, h) ? .record(size: h.recordSize) : .invalid
        }
    }

    /// The first whole record at or after `from` whose magic, length and checksum are valid and whose
    /// number is in `numbers`: where reading goes on after damaged bytes.
    static func resync(_ bytes: UnsafeRawBufferPointer, from: Int, numbers: Range<UInt64>) -> (offset: Int, header: Header)? {
        guard let at = RecordScanner.resync(bytes, from: from, framing: Framing(numbers: numbers)),
              let h = header(bytes, at: at) else { return nil }
        return (at, h)
    }

    static func put32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) {
        for i in 0..<4 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) }
    }
    static func put64(_ b: inout [UInt8], _ at: Int, _ v: UInt64) {
        for i in 0..<8 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
    }
    static func get32(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(b[at + i]) << (8 * UInt32(i)) }
        return v
    }
    static func get64(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(b[at + i]) << (8 * UInt64(i)) }
        return v
    }
}

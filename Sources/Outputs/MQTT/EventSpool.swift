import Core
import Platform
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// Where a spool record starts: its segment (named by the segment's first record number), the byte
/// offset in that segment, and the record's number. Ordered by record number.
public struct SpoolPosition: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var segment: UInt64
    public var offset: Int
    public var record: UInt64

    public static func < (a: SpoolPosition, b: SpoolPosition) -> Bool { a.record < b.record }
    public var description: String { "record \(record) (segment \(SpoolFiles.segmentName(segment)) offset \(offset))" }
}

/// One event read back from the spool.
public struct SpoolRecord: Sendable {
    public let number: UInt64
    /// When it was spooled (wall clock, and the boot clock with this boot's id).
    public let stamp: SpoolStamp
    public let payload: [UInt8]
    /// The position right after this record: where reading goes on, and what `acknowledge` takes.
    public let next: SpoolPosition

    /// Wall-clock time it was spooled, nanoseconds since the epoch.
    public var spooledAt: Int64 { stamp.wall }
}

/// How the spool is bounded.
public struct SpoolLimits: Sendable, Equatable {
    /// The bytes of records not yet delivered (headers included); beyond it the oldest are dropped.
    public var maxBytes: Int
    /// Records spooled longer ago than this are dropped. 0: no age limit.
    public var maxAgeNanoseconds: Int64
    /// A new segment file is started when the active one would grow past this.
    public var segmentBytes: Int

    public init(maxBytes: Int, maxAgeNanoseconds: Int64, segmentBytes: Int? = nil) {
        self.maxBytes = max(SpoolFiles.headerSize + 1, maxBytes)
        self.maxAgeNanoseconds = max(0, maxAgeNanoseconds)
        self.segmentBytes = segmentBytes ?? min(8 << 20, max(64 << 10, maxBytes / 16))
    }

    public init(settings: MQTTSettings) {
        self.init(maxBytes: settings.spoolMaxMB << 20,
                  maxAgeNanoseconds: Int64(settings.spoolMaxAgeHours) * 3600 * 1_000_000_000)
    }
}

/// The spool's numbers, for health, state, status and metrics.
public struct SpoolDepth: Sendable, Equatable {
    /// Records not yet acknowledged by the broker, and their bytes on disk.
    public var records: UInt64 = 0
    public var bytes: Int = 0
    /// Dropped because the spool was full (oldest first), because they were older than the age limit,
    /// because they were found damaged (when the spool was opened or read back), and because the broker
    /// refused them for good (`MQTTSession.maxRefusals` times, or too large for it).
    public var droppedFull: UInt64 = 0
    public var droppedExpired: UInt64 = 0
    public var droppedDamaged: UInt64 = 0
    public var droppedRefused: UInt64 = 0
    /// Recovered when the spool was opened (records not yet acknowledged before the last stop).
    public var recovered: UInt64 = 0

    public init() {}

    public var dropped: UInt64 { droppedFull + droppedExpired + droppedDamaged + droppedRefused }
}

/// Why the spool cannot work: the file or directory and the errno.
public struct SpoolError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The directory's lock is held by another spool (another scangate, or an MQTT output not yet gone).
    public let lockBusy: Bool
    /// The errno of the call that failed, when one did.
    public let errno: Errno?
    public init(_ message: String, lockBusy: Bool = false) {
        self.message = message
        self.lockBusy = lockBusy
        self.errno = nil
    }
    init(_ error: SystemError) {
        self.message = "mqtt-spool: " + error.description
        self.lockBusy = false
        self.errno = error.errno
    }
    /// The file system (or the quota) had no room for the write: ENOSPC, EDQUOT.
    public var noSpace: Bool { errno?.meansNoSpace ?? false }
    public var description: String { message }
}

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

    /// The first whole record at or after `from` whose magic, length and checksum are valid and whose
    /// number is in `numbers`: where reading goes on after damaged bytes.
    static func resync(_ bytes: UnsafeRawBufferPointer, from: Int, numbers: Range<UInt64>) -> (offset: Int, header: Header)? {
        var at = max(0, from)
        while at + legacyHeaderSize <= bytes.count {
            // "SGR" then '1' or '2'.
            if bytes[at] == 0x53, bytes[at + 1] == 0x47, bytes[at + 2] == 0x52, bytes[at + 3] == 0x31 || bytes[at + 3] == 0x32,
               let h = header(bytes, at: at), numbers.contains(h.number), crcMatches(bytes, recordAt: at, h) {
                return (at, h)
            }
            at += 1
        }
        return nil
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

/// The on-disk spool of events the broker has not acknowledged: append-only segment files of
/// checksummed records, and a head file naming the first record not yet delivered.
///
/// Durability: `append` writes a batch and calls fdatasync before the records become readable, so a
/// record is on disk before it is ever published; a new segment file is made durable (directory
/// fsync) before records go into it. The head moves on PUBACK and is written lazily (`persistHead`),
/// so after a crash or power cut the head may be behind: records already delivered are delivered
/// again (consumers drop them by id), none is lost.
///
/// Damage: a torn last record (power cut during a write: the damage reaches the end of the last segment)
/// is cut off when the spool is opened. Damage anywhere else (bit rot, an outside write) loses only the
/// records it hits: reading resynchronises at the next record whose magic and checksum are valid, the
/// records lost are counted (`droppedDamaged`) and logged, and the damaged bytes are skipped (never cut
/// while the spool runs, so an append in progress is never touched).
///
/// Bounds: when a new record would make the undelivered bytes exceed `maxBytes`, the oldest records are
/// dropped first; records older than `maxAgeNanoseconds` are dropped by `expire`, their age judged as
/// `SpoolClock` says (the boot clock within a boot; across boots the wall clock only when both readings
/// were synchronised). Each drop is counted and logged (rate-limited). Disk use is at most `maxBytes`
/// plus one segment's delivered prefix.
///
/// Threads: one appender (the spool thread) and one reader (the session thread); every method is safe
/// from any thread. The appender's write and fdatasync run outside the lock.
public final class EventSpool: Sendable {
    public let directory: String
    public let limits: SpoolLimits
    public let clock: SpoolClock
    private let logger: Logger
    /// Test failures of a record batch's write and fdatasync (a full disk); `.none` in service.
    private let faults: WriteFaults
    private let state: PosixMutex<State>
    private let lockFD: Int32
    private let headFD: Int32

    /// Records before this wall-clock time (2025-01-01) have a clock that was not set.
    static let plausibleWallClockFloor: Int64 = SpoolClock.plausibleWallClockFloor
    /// Most record headers one `expire` call reads.
    static let expiryScanLimit = 4096

    /// Damaged bytes skipped: from `start` reading goes on at `end` with record `record`; `lost`
    /// records (by number) were in them.
    struct Hole {
        let start: Int
        let end: Int
        let record: UInt64
        let lost: UInt64
    }

    struct Segment {
        let first: UInt64
        let fd: Int32
        /// Bytes written (and reserved by an append in progress).
        var size: Int
        /// Bytes known to be on disk and readable.
        var durableSize: Int
        var holes: [Hole] = []
    }

    struct State {
        var segments: [Segment] = []
        var head: SpoolPosition
        var nextRecord: UInt64
        /// The first record not yet durable (records below it may be read).
        var durableEnd: UInt64
        var depth = SpoolDepth()
        var headGeneration: UInt64 = 0
        var persistedHead: UInt64 = 0
        var headDirty = false
        var closed = false
        /// Where the last age scan stopped (records from the head to it had no known age), and whether the
        /// wall clock was synchronised then; a change of that starts the scan at the head again.
        var expiryResume: (position: SpoolPosition, synchronized: Bool)?
    }

    /// What opening found, for the log.
    public struct Recovery: Sendable {
        public var records: UInt64 = 0
        /// Records lost to damage found while opening (also counted in `depth.droppedDamaged`).
        public var damaged: UInt64 = 0
        public var notes: [String] = []
    }
    public let recovery: Recovery

    /// Opens (or creates) the spool in `directory` and recovers it: segments are checked record by record,
    /// a torn tail is cut off, damage elsewhere is skipped and counted, delivered segments are removed.
    /// Takes an exclusive lock on the directory (`lock`), so a second spool on it, in this process or
    /// another, fails (with `lockBusy`).
    public init(directory: String, limits: SpoolLimits, logger: Logger, clock: SpoolClock = .system(),
                faults: WriteFaults = .none) throws(SpoolError) {
        self.directory = directory
        self.limits = limits
        self.logger = logger
        self.clock = clock
        self.faults = faults
        try EventSpool.makeDirectory(directory)

        let lockPath = directory + "/lock"
        let lock: Int32
        switch FileDescriptor.open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode: 0o600) {
        case .success(let fd): lock = fd.rawValue
        case .failure(let e): throw SpoolError(SystemError("open", lockPath, e))
        }
        if case .failure(let e) = retryOnInterrupt({ flock(lock, LOCK_EX | LOCK_NB) }) {
            EventSpool.closeFile(lock, lockPath, logger)
            if e.rawValue == EWOULDBLOCK {
                throw SpoolError("mqtt-spool \(directory): in use by another scangate or MQTT output (flock \(lockPath): \(e)); "
                                 + "give each output its own spool directory", lockBusy: true)
            }
            throw SpoolError(SystemError("flock", lockPath, e))
        }
        let headPath = directory + "/head"
        let head: Int32
        switch FileDescriptor.open(headPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode: 0o600) {
        case .success(let fd): head = fd.rawValue
        case .failure(let e):
            EventSpool.closeFile(lock, lockPath, logger)
            throw SpoolError(SystemError("open", headPath, e))
        }
        var headInfo = stat()
        guard fstat(head, &headInfo) == 0, headInfo.st_mode & S_IFMT == S_IFREG else {
            EventSpool.closeFile(head, headPath, logger)
            EventSpool.closeFile(lock, lockPath, logger)
            throw SpoolError("mqtt-spool \(directory): \(headPath) is not a regular file; remove it (the spool makes its own)")
        }
        do throws(SpoolError) {
            let (state, recovery) = try EventSpool.recover(directory: directory, headFD: head, logger: logger)
            self.state = PosixMutex(state)
            self.recovery = recovery
        } catch {
            EventSpool.closeFile(head, headPath, logger)
            EventSpool.closeFile(lock, lockPath, logger)
            throw error
        }
        self.lockFD = lock
        self.headFD = head
        for note in recovery.notes { logger.warning("mqtt spool \(directory): \(note)") }
        if recovery.records > 0 {
            logger.notice("mqtt spool \(directory): \(recovery.records) events not yet acknowledged by the broker will be sent again")
        }
        if clock.bootID == nil {
            logger.warning("mqtt spool \(directory): cannot read this boot's id (\(BootID.path)); the age of spooled events is "
                           + "judged by the wall clock only, and only while it is synchronised")
        }
    }

    deinit { close() }

    /// Writes the head, syncs, closes every file and releases the directory lock. Called once; later calls do nothing.
    public func close() {
        let fds: [(Int32, String)]? = state.withLock { s in
            guard !s.closed else { return nil }
            writeHeadLocked(&s, sync: true)
            s.closed = true
            return s.segments.map { ($0.fd, directory + "/" + SpoolFiles.segmentName($0.first)) }
        }
        guard let fds else { return }
        closeFiles(fds)
    }

    /// Closes the files without writing the head: what a crash leaves behind (for tests).
    func abandon() {
        let fds: [(Int32, String)]? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.segments.map { ($0.fd, directory + "/" + SpoolFiles.segmentName($0.first)) }
        }
        guard let fds else { return }
        closeFiles(fds)
    }

    private func closeFiles(_ fds: [(Int32, String)]) {
        for (fd, path) in fds { EventSpool.closeFile(fd, path, logger) }
        EventSpool.closeFile(headFD, directory + "/head", logger)
        // Last: the lock goes with it.
        EventSpool.closeFile(lockFD, directory + "/lock", logger)
    }

    public var depth: SpoolDepth { state.withLock { $0.depth } }
    public var head: SpoolPosition { state.withLock { $0.head } }

    // MARK: - Append

    /// Appends `payloads` in order, stamped now (the wall clock's reading replaced by `wallTime` when
    /// given), and makes them durable (write + fdatasync) before they can be read. Drops the oldest
    /// records first when the spool would exceed its size. Returns the number of records dropped to make
    /// room. One thread appends.
    @discardableResult
    public func append(_ payloads: [[UInt8]], wallTime: Int64? = nil) throws(SpoolError) -> Int {
        guard !payloads.isEmpty else { return 0 }
        var stamp = clock.stamp()
        if let wallTime { stamp.wall = wallTime }
        var dropped = 0
        var bytes: [UInt8] = []
        // Phase 1, locked: room, the segment, the record numbers, the bytes.
        let plan: (fd: Int32, offset: Int, path: String, last: UInt64)? = try state.withLock { s throws(SpoolError) in
            guard !s.closed else { return nil }
            var total = 0
            for p in payloads { total += SpoolFiles.headerSize + p.count }
            for p in payloads where p.count > SpoolFiles.maxPayload {
                throw SpoolError("mqtt-spool: an event of \(p.count) bytes is larger than the record limit of \(SpoolFiles.maxPayload)")
            }
            // The batch goes into one segment; start a new one when it would overflow the active one.
            if s.segments.last.map({ $0.size > 0 && $0.size + total > limits.segmentBytes }) ?? true {
                try startSegmentLocked(&s)
            }
            for p in payloads {
                let size = SpoolFiles.headerSize + p.count
                while s.depth.bytes + size > limits.maxBytes, s.head.record < s.durableEnd {
                    guard dropHeadLocked(&s) else { break }
                    dropped += 1
                }
                SpoolFiles.encode(number: s.nextRecord, stamp: stamp, payload: p, into: &bytes)
                s.nextRecord += 1
                s.depth.bytes += size
            }
            let index = s.segments.count - 1
            let offset = s.segments[index].size
            s.segments[index].size += bytes.count
            return (s.segments[index].fd, offset, directory + "/" + SpoolFiles.segmentName(s.segments[index].first), s.nextRecord)
        }
        guard let plan else { throw SpoolError("mqtt-spool \(directory): closed") }
        // Phase 2, unlocked: write and sync. Nothing else writes, cuts or reads these bytes meanwhile: the
        // reader stops at `durableSize`, and damage handling never truncates.
        var written = 0
        while written < bytes.count {
            let n = faults.write?(plan.path).map({ Result<Int, Errno>.failure($0) }) ?? bytes.withUnsafeBytes { raw in
                retryOnInterrupt { pwrite(plan.fd, raw.baseAddress! + written, raw.count - written, off_t(plan.offset + written)) }
            }
            switch n {
            case .success(let count): written += count
            case .failure(let e):
                rollBack(fd: plan.fd, path: plan.path, offset: plan.offset, count: payloads.count, bytes: bytes.count)
                throw SpoolError(SystemError("write", plan.path, e))
            }
        }
        if case .failure(let e) = faults.sync?(plan.path).map({ Result<Int32, Errno>.failure($0) }) ?? retryOnInterrupt({ fdatasync(plan.fd) }) {
            rollBack(fd: plan.fd, path: plan.path, offset: plan.offset, count: payloads.count, bytes: bytes.count)
            throw SpoolError(SystemError("fdatasync", plan.path, e))
        }
        // Phase 3, locked: readable.
        state.withLock { s in
            if let i = s.segments.firstIndex(where: { $0.fd == plan.fd }) {
                s.segments[i].durableSize = max(s.segments[i].durableSize, plan.offset + bytes.count)
            }
            s.durableEnd = plan.last
            s.depth.records += UInt64(payloads.count)
        }
        return dropped
    }

    /// A failed write: the reserved bytes and numbers are given back, the file cut to what was durable.
    private func rollBack(fd: Int32, path: String, offset: Int, count: Int, bytes: Int) {
        let undone: Bool = state.withLock { s in
            guard let i = s.segments.firstIndex(where: { $0.fd == fd }), s.segments[i].size == offset + bytes else { return false }
            s.segments[i].size = offset
            s.nextRecord -= UInt64(count)
            s.depth.bytes -= bytes
            return true
        }
        guard undone else { return }
        if case .failure(let e) = retryOnInterrupt({ ftruncate(fd, off_t(offset)) }) {
            // The next batch is written over these bytes; any left past it is a torn tail, cut at the next open.
            logger.error("mqtt spool \(path): cannot cut back a failed write (ftruncate: \(e)); the next write goes over it",
                         rateLimitKey: "mqtt-spool-truncate")
        }
    }

    private func startSegmentLocked(_ s: inout State) throws(SpoolError) {
        let first = s.nextRecord
        let path = directory + "/" + SpoolFiles.segmentName(first)
        let fd: Int32
        switch FileDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600) {
        case .success(let d): fd = d.rawValue
        case .failure(let e): throw SpoolError(SystemError("create", path, e))
        }
        // The new file's directory entry is durable before any record goes into it.
        if let error = EventSpool.syncDirectory(directory) {
            EventSpool.closeFile(fd, path, logger)
            EventSpool.removeFile(path, logger)
            throw SpoolError(error)
        }
        // An empty active segment that is replaced would otherwise stay behind.
        if let last = s.segments.last, last.size == 0 {
            let lastPath = directory + "/" + SpoolFiles.segmentName(last.first)
            EventSpool.closeFile(last.fd, lastPath, logger)
            EventSpool.removeFile(lastPath, logger)
            s.segments.removeLast()
        }
        s.segments.append(Segment(first: first, fd: fd, size: 0, durableSize: 0))
        if s.segments.count == 1 || !s.segments.contains(where: { $0.first == s.head.segment }) {
            s.head = SpoolPosition(segment: first, offset: 0, record: max(s.head.record, first))
        }
        normalizeHeadLocked(&s)
    }

    // MARK: - Positions

    private func index(_ s: State, _ segment: UInt64) -> Int? { s.segments.firstIndex { $0.first == segment } }

    /// `p` with damaged bytes skipped and the end of a segment that is not the last moved to the start of
    /// the next one: where reading at `p` really goes on.
    private func normalized(_ s: State, _ start: SpoolPosition) -> SpoolPosition {
        var p = start
        while let i = index(s, p.segment) {
            if let hole = s.segments[i].holes.first(where: { $0.start == p.offset && p.record < $0.record }) {
                p = SpoolPosition(segment: p.segment, offset: hole.end, record: hole.record)
                continue
            }
            if i + 1 < s.segments.count, p.offset >= s.segments[i].durableSize {
                let next = s.segments[i + 1].first
                p = SpoolPosition(segment: next, offset: 0, record: max(p.record, next))
                continue
            }
            break
        }
        return p
    }

    /// The header of the record at `p`, read from the durable bytes of segment `index`.
    private func readHeader(_ segment: Segment, at p: SpoolPosition) -> SpoolFiles.Header? {
        let count = min(SpoolFiles.headerSize, segment.durableSize - p.offset)
        guard count >= SpoolFiles.legacyHeaderSize else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        guard preadAll(segment.fd, &bytes, offset: p.offset) else { return nil }
        return bytes.withUnsafeBytes { SpoolFiles.header($0, at: 0) }
    }

    // MARK: - Read and acknowledge

    /// Up to `maxCount` durable records from `position` (nil: the head), at most about `maxBytes`.
    /// A position the head has passed (records dropped meanwhile) reads from the head. Damaged records
    /// are skipped (counted and logged once).
    public func read(from position: SpoolPosition?, maxCount: Int, maxBytes: Int = 1 << 20) -> [SpoolRecord] {
        state.withLock { s in
            guard !s.closed else { return [] }
            var at = position.map { $0.record < s.head.record ? s.head : $0 } ?? s.head
            var out: [SpoolRecord] = []
            var bytes = 0
            while out.count < maxCount, bytes < maxBytes {
                at = normalized(s, at)
                guard at.record < s.durableEnd else { break }
                guard let i = index(s, at.segment) else {
                    // The segment is gone (dropped): go on at the head.
                    if at == s.head { break }
                    at = s.head
                    continue
                }
                guard at.offset < s.segments[i].durableSize else { break }
                switch readRecord(s.segments[i], at: at) {
                case .record(let r):
                    out.append(r)
                    bytes += r.payload.count
                    at = r.next
                case .damaged(let reason):
                    damagedLocked(&s, index: i, at: at, reason: reason)
                }
            }
            return out
        }
    }

    enum ReadResult {
        case record(SpoolRecord)
        case damaged(String)
    }

    private func readRecord(_ segment: Segment, at position: SpoolPosition) -> ReadResult {
        guard let h = readHeader(segment, at: position) else { return .damaged("a record header that is not valid") }
        guard h.number == position.record else { return .damaged("record \(h.number) where \(position.record) was expected") }
        let end = position.offset + h.recordSize
        guard end <= segment.durableSize else { return .damaged("a record that runs past the end of what was written") }
        var whole = [UInt8](repeating: 0, count: h.recordSize)
        guard preadAll(segment.fd, &whole, offset: position.offset) else { return .damaged("a short read of a record") }
        guard whole.withUnsafeBytes({ SpoolFiles.crcMatches($0, recordAt: 0, h) }) else { return .damaged("a record whose checksum does not match") }
        let next = SpoolPosition(segment: segment.first, offset: end, record: h.number + 1)
        return .record(SpoolRecord(number: h.number, stamp: h.stamp, payload: Array(whole[h.size...]), next: next))
    }

    /// Damage at `p` in segment `index`, found while the spool runs (bit rot, or an outside write after
    /// the records were synced): reading resynchronises at the next valid record of the durable bytes;
    /// the records in between are lost, counted and logged. Nothing is truncated (an append may be
    /// writing past `durableSize`) and the head moves only when it was at `p`. Returns the records lost.
    @discardableResult
    private func damagedLocked(_ s: inout State, index i: Int, at p: SpoolPosition, reason: String) -> UInt64 {
        let segment = s.segments[i]
        let isLast = i + 1 == s.segments.count
        let upper = isLast ? s.durableEnd : s.segments[i + 1].first
        var hole: Hole?
        let span = segment.durableSize - p.offset
        if span > 1, upper > p.record + 1 {
            var bytes = [UInt8](repeating: 0, count: span)
            if preadAll(segment.fd, &bytes, offset: p.offset),
               let found = bytes.withUnsafeBytes({ SpoolFiles.resync($0, from: 1, numbers: (p.record + 1)..<upper) }) {
                hole = Hole(start: p.offset, end: p.offset + found.offset, record: found.header.number, lost: found.header.number - p.record)
            }
        }
        let resume = max(upper, p.record + 1)
        let h = hole ?? Hole(start: p.offset, end: segment.durableSize, record: resume, lost: resume - p.record)
        s.segments[i].holes.append(h)
        s.depth.records -= min(h.lost, s.depth.records)
        s.depth.bytes -= min(h.end - h.start, s.depth.bytes)
        s.depth.droppedDamaged += h.lost
        if s.head == p {
            s.head = normalized(s, p)
            s.headDirty = true
        }
        logger.error("mqtt spool \(directory)/\(SpoolFiles.segmentName(segment.first)): \(reason) at offset \(p.offset) "
                     + "(damage after the records were written: bit rot or an outside write); "
                     + "\(h.lost) events lost (records \(p.record)-\(h.record - 1)); reading goes on at record \(h.record); "
                     + "\(s.depth.droppedDamaged) lost to damage so far", rateLimitKey: "mqtt-spool-damaged")
        return h.lost
    }

    /// The broker acknowledged every record before `next`: the head moves there; segments wholly
    /// before it are removed. `refused` of them were not delivered but refused for good by the broker
    /// (counted as `droppedRefused`). The head file is written later (`persistHead`).
    public func acknowledge(upTo next: SpoolPosition, refused: UInt64 = 0) {
        state.withLock { s in
            guard !s.closed, next.record > s.head.record, next.record <= s.durableEnd else { return }
            let (records, bytes) = spanLocked(s, from: s.head, to: next)
            s.depth.records -= min(s.depth.records, records)
            s.depth.bytes -= min(s.depth.bytes, bytes)
            s.depth.droppedRefused += min(refused, records)
            s.head = next
            s.headDirty = true
            normalizeHeadLocked(&s)
        }
    }

    /// Records and bytes from `a` to `b` (both positions of records, a <= b), without the damaged bytes
    /// and the records lost in them (already taken off the depth).
    private func spanLocked(_ s: State, from a: SpoolPosition, to b: SpoolPosition) -> (UInt64, Int) {
        var records = b.record - a.record
        var bytes = 0
        for seg in s.segments where seg.first >= a.segment && seg.first <= b.segment {
            let from = seg.first == a.segment ? a.offset : 0
            let to = seg.first == b.segment ? b.offset : seg.size
            bytes += max(0, to - from)
            for h in seg.holes where h.start >= from && h.end <= to && h.record > (seg.first == a.segment ? a.record : 0)
                && h.record <= b.record {
                records -= min(records, h.lost)
                bytes -= h.end - h.start
            }
        }
        return (records, max(0, bytes))
    }

    /// Moves a head that sits at the end of a segment (or at damaged bytes) to where reading goes on, and
    /// removes the segments wholly behind the head (never the last, active one).
    private func normalizeHeadLocked(_ s: inout State) {
        let moved = normalized(s, s.head)
        if moved != s.head {
            s.head = moved
            s.headDirty = true
        }
        while s.segments.count > 1, s.segments[0].first < s.head.segment {
            let first = s.segments.removeFirst()
            let path = directory + "/" + SpoolFiles.segmentName(first.first)
            EventSpool.closeFile(first.fd, path, logger)
            EventSpool.removeFile(path, logger)
        }
    }

    // MARK: - Drops

    /// Drops the record at the head because the spool is full; false when there is none that can be read.
    /// A damaged head record is skipped as damage (counted there) and counts as progress.
    private func dropHeadLocked(_ s: inout State) -> Bool {
        normalizeHeadLocked(&s)
        guard s.head.record < s.durableEnd, let i = index(s, s.head.segment), s.head.offset < s.segments[i].durableSize else { return false }
        guard let h = readHeader(s.segments[i], at: s.head), h.number == s.head.record,
              s.head.offset + h.recordSize <= s.segments[i].durableSize else {
            damagedLocked(&s, index: i, at: s.head, reason: "a record header that is not valid")
            return true
        }
        s.head = SpoolPosition(segment: s.head.segment, offset: s.head.offset + h.recordSize, record: h.number + 1)
        s.headDirty = true
        s.depth.records -= min(1, s.depth.records)
        s.depth.bytes -= min(h.recordSize, s.depth.bytes)
        s.depth.droppedFull += 1
        logger.warning("mqtt spool \(directory): the spool is full (mqtt-spool-max-mb = \(limits.maxBytes >> 20) MiB): dropped the oldest event "
                       + "(record \(h.number), spooled \(WallClock.rfc3339(nanoseconds: h.stamp.wall))); "
                       + "\(s.depth.droppedFull) dropped so far for this reason", rateLimitKey: "mqtt-spool-drop-full")
        normalizeHeadLocked(&s)
        return true
    }

    /// Drops the records older than the age limit. Their age is judged as `SpoolClock.age` says; a record
    /// whose age is unknown (stamped in another boot with a clock that was not synchronised) is kept, but
    /// blocks nothing: records are in the order they were spooled, so when a later record is known to be
    /// too old, every record before it is too, and all of them go. Returns how many were dropped.
    @discardableResult
    public func expire() -> Int {
        guard limits.maxAgeNanoseconds > 0 else { return 0 }
        let synchronized = clock.wallSynchronized()
        return state.withLock { s in
            guard !s.closed else { return 0 }
            normalizeHeadLocked(&s)
            var at = s.head
            if let r = s.expiryResume, r.synchronized == synchronized, r.position.record > s.head.record,
               index(s, r.position.segment) != nil {
                at = r.position
            }
            var expiredUpTo: (next: SpoolPosition, stamp: SpoolStamp)?
            var resume: SpoolPosition?
            var scanned = 0
            scan: while scanned < EventSpool.expiryScanLimit {
                at = normalized(s, at)
                guard at.record < s.durableEnd, let i = index(s, at.segment), at.offset < s.segments[i].durableSize else {
                    resume = nil
                    break
                }
                guard let h = readHeader(s.segments[i], at: at), h.number == at.record,
                      at.offset + h.recordSize <= s.segments[i].durableSize else {
                    damagedLocked(&s, index: i, at: at, reason: "a record header that is not valid")
                    continue
                }
                scanned += 1
                let next = SpoolPosition(segment: at.segment, offset: at.offset + h.recordSize, record: h.number + 1)
                switch clock.age(of: h.stamp) {
                case .known(let age) where age > limits.maxAgeNanoseconds:
                    expiredUpTo = (next, h.stamp)
                case .known:
                    // Fresh: everything after it was spooled later. The next scan can start here.
                    resume = at
                    break scan
                case .unknown:
                    break
                }
                at = next
                resume = at
            }
            s.expiryResume = resume.map { ($0, synchronized) }
            guard let expiredUpTo else { return 0 }
            let first = s.head.record
            let (records, bytes) = spanLocked(s, from: s.head, to: expiredUpTo.next)
            s.depth.records -= min(records, s.depth.records)
            s.depth.bytes -= min(bytes, s.depth.bytes)
            s.depth.droppedExpired += records
            s.head = expiredUpTo.next
            s.headDirty = true
            normalizeHeadLocked(&s)
            logger.warning("mqtt spool \(directory): dropped \(records) events older than mqtt-spool-max-age-h "
                           + "(\(limits.maxAgeNanoseconds / 3_600_000_000_000) h) (records \(first)-\(expiredUpTo.next.record - 1), "
                           + "the newest of them spooled \(WallClock.rfc3339(nanoseconds: expiredUpTo.stamp.wall))); "
                           + "\(s.depth.droppedExpired) dropped so far for this reason", rateLimitKey: "mqtt-spool-drop-expired")
            return Int(records)
        }
    }

    // MARK: - Head file

    /// Writes the head (the first undelivered record) if it moved; with `sync`, also fdatasyncs it.
    public func persistHead(sync: Bool) {
        state.withLock { s in
            guard !s.closed else { return }
            writeHeadLocked(&s, sync: sync)
        }
    }

    private func writeHeadLocked(_ s: inout State, sync: Bool) {
        guard s.headDirty || s.persistedHead != s.head.record else {
            return
        }
        s.headGeneration += 1
        var slot = [UInt8](repeating: 0, count: SpoolFiles.headSlotSize)
        SpoolFiles.put32(&slot, 0, SpoolFiles.headMagic)
        SpoolFiles.put64(&slot, 4, s.headGeneration)
        SpoolFiles.put64(&slot, 12, s.head.record)
        let crc = slot.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[4..<20])) }
        SpoolFiles.put32(&slot, 20, crc)
        let offset = off_t(Int(s.headGeneration % 2) * SpoolFiles.headSlotSize)
        let written: Result<Int, Errno> = slot.withUnsafeBytes { raw in
            retryOnInterrupt({ pwrite(headFD, raw.baseAddress, raw.count, offset) })
        }
        switch written {
        case .success(let n) where n == SpoolFiles.headSlotSize: break
        case .success(let n):
            logger.error("mqtt spool \(directory)/head: a short write of the head (\(n) of \(SpoolFiles.headSlotSize) bytes); "
                         + "events may be sent again after a restart", rateLimitKey: "mqtt-spool-head")
            return
        case .failure(let e):
            logger.error("mqtt spool \(directory)/head: cannot write the head: \(e) (events may be sent again after a restart)",
                         rateLimitKey: "mqtt-spool-head")
            return
        }
        if sync, case .failure(let e) = retryOnInterrupt({ fdatasync(headFD) }) {
            // Not known to be on disk: it stays dirty and is written (to the other slot) again next time.
            logger.error("mqtt spool \(directory)/head: cannot sync the head: \(e) (events may be sent again after a restart)",
                         rateLimitKey: "mqtt-spool-head")
            s.headDirty = true
            return
        }
        s.persistedHead = s.head.record
        s.headDirty = false
    }

    // MARK: - Files

    /// close(2), with a failure logged (the data was synced before; nothing is retried).
    static func closeFile(_ fd: Int32, _ path: String, _ logger: Logger) {
        if case .failure(let e) = FileDescriptor(rawValue: fd).close() {
            logger.warning("mqtt spool \(path): close: \(e)", rateLimitKey: "mqtt-spool-close")
        }
    }

    /// unlink(2); a file already gone is fine, any other failure is logged (the file stays behind).
    static func removeFile(_ path: String, _ logger: Logger) {
        if unlink(path) != 0 {
            let e = Errno.current
            guard e.rawValue != ENOENT else { return }
            logger.warning("mqtt spool \(path): cannot remove it: \(e) (it stays on disk)", rateLimitKey: "mqtt-spool-unlink")
        }
    }

    // MARK: - Opening

    static func makeDirectory(_ path: String) throws(SpoolError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw SpoolError("mqtt-spool \(path): not a directory") }
            guard access(path, W_OK | X_OK) == 0 else {
                throw SpoolError("mqtt-spool \(path): not writable by this user: \(Errno.current)")
            }
            return
        }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty, stat(parent, &info) != 0 { try makeDirectory(parent) }
        guard mkdir(path, 0o750) == 0 || errno == EEXIST else {
            throw SpoolError(SystemError("mkdir", path, .current))
        }
        if let e = syncDirectory(parent.isEmpty ? "/" : parent) { throw SpoolError(e) }
    }

    static func syncDirectory(_ path: String) -> SystemError? {
        switch FileDescriptor.open(path, O_RDONLY | O_DIRECTORY) {
        case .failure(let e): return SystemError("open", path, e)
        case .success(let fd):
            defer { _ = fd.close() }
            if case .failure(let e) = retryOnInterrupt({ fsync(fd.rawValue) }) { return SystemError("fsync", path, e) }
            return nil
        }
    }

    static func listSegments(_ directory: String) throws(SpoolError) -> [UInt64] {
        let names: [String]
        do { names = try Directory.entries(directory) } catch { throw SpoolError(error) }
        return names.compactMap(SpoolFiles.segmentNumber(fromName:)).sorted()
    }

    /// The head file's best slot: its generation and the first record not yet delivered; nil when no slot is valid.
    static func readHead(_ fd: Int32) -> Result<(generation: UInt64, record: UInt64)?, Errno> {
        var bytes = [UInt8](repeating: 0, count: 2 * SpoolFiles.headSlotSize)
        let n: Int
        switch bytes.withUnsafeMutableBytes({ raw in retryOnInterrupt { pread(fd, raw.baseAddress, raw.count, 0) } }) {
        case .success(let count): n = count
        case .failure(let e): return .failure(e)
        }
        var best: (generation: UInt64, record: UInt64)?
        bytes.withUnsafeBytes { raw in
            for slot in 0..<2 where (slot + 1) * SpoolFiles.headSlotSize <= n {
                let o = slot * SpoolFiles.headSlotSize
                guard SpoolFiles.get32(raw, o) == SpoolFiles.headMagic else { continue }
                let crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: raw[(o + 4)..<(o + 20)]))
                guard crc == SpoolFiles.get32(raw, o + 20) else { continue }
                let generation = SpoolFiles.get64(raw, o + 4), record = SpoolFiles.get64(raw, o + 12)
                if generation > (best?.generation ?? 0) || best == nil { best = (generation, record) }
            }
        }
        return .success(best)
    }

    /// A segment file that may be read: opened, a regular file, at most a segment's size.
    private struct Candidate {
        let first: UInt64
        let fd: Int32
        let path: String
        let size: Int
    }

    /// Scans every segment, cuts a torn tail, skips (and counts) damage elsewhere, finds the head,
    /// removes delivered segments.
    static func recover(directory: String, headFD: Int32, logger: Logger) throws(SpoolError) -> (State, Recovery) {
        var recovery = Recovery()
        let storedHead: (generation: UInt64, record: UInt64)?
        switch readHead(headFD) {
        case .success(let h): storedHead = h
        case .failure(let e): throw SpoolError(SystemError("read", directory + "/head", e))
        }
        let headRecord = storedHead?.record ?? 0

        // Pass 1: which files are ours to read. Only a regular file of at most a segment's size is read
        // (issue 16: every input bounded); a symlink, a FIFO or a device put in the spool's place is left
        // alone and said so, and blocks nothing.
        var candidates: [Candidate] = []
        func closeAll() { for c in candidates { closeFile(c.fd, c.path, logger) } }
        for first in try listSegments(directory) {
            let path = directory + "/" + SpoolFiles.segmentName(first)
            let fd: Int32
            switch FileDescriptor.open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) {
            case .success(let d): fd = d.rawValue
            case .failure(let e) where e.rawValue == ELOOP || e.rawValue == ENXIO || e.rawValue == EISDIR:
                recovery.notes.append("\(SpoolFiles.segmentName(first)) is not a regular file (\(e)); left in place and not read")
                continue
            case .failure(let e):
                closeAll()
                throw SpoolError(SystemError("open", path, e))
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let e = Errno.current
                closeFile(fd, path, logger)
                closeAll()
                throw SpoolError(SystemError("fstat", path, e))
            }
            guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= 0, Int(info.st_size) <= SpoolFiles.maxSegmentFileBytes else {
                recovery.notes.append(info.st_mode & S_IFMT == S_IFREG
                    ? "\(SpoolFiles.segmentName(first)) is \(info.st_size) bytes, over a segment's \(SpoolFiles.maxSegmentFileBytes); left in place and not read"
                    : "\(SpoolFiles.segmentName(first)) is not a regular file; left in place and not read")
                closeFile(fd, path, logger)
                continue
            }
            // Back to blocking I/O for a regular file (O_NONBLOCK only kept a FIFO's open from waiting).
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
                let e = Errno.current
                closeFile(fd, path, logger)
                closeAll()
                throw SpoolError(SystemError("fcntl", path, e))
            }
            candidates.append(Candidate(first: first, fd: fd, path: path, size: Int(info.st_size)))
        }

        // Pass 2: record by record, one file in memory at a time.
        var segments: [Segment] = []
        var expected: UInt64? = nil
        var head: SpoolPosition? = nil
        var live: (records: UInt64, bytes: Int) = (0, 0)
        var damaged: UInt64 = 0
        /// Of the records first..<end, how many the broker had not acknowledged (the head file says).
        func undelivered(_ first: UInt64, _ end: UInt64) -> UInt64 { end > max(first, headRecord) ? end - max(first, headRecord) : 0 }
        for (n, c) in candidates.enumerated() {
            let name = SpoolFiles.segmentName(c.first)
            if let e = expected, c.first < e {
                recovery.notes.append("\(name) overlaps the segment before it; left in place and not read")
                closeFile(c.fd, c.path, logger)
                continue
            }
            let isLast = n + 1 == candidates.count
            let upper = isLast ? UInt64.max : candidates[n + 1].first
            var content = [UInt8](repeating: 0, count: c.size)
            guard content.withUnsafeMutableBytes({ preadAll(c.fd, $0, offset: 0) }) else {
                let e = Errno.current
                for s in segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
                for rest in candidates[n...] { closeFile(rest.fd, rest.path, logger) }
                throw SpoolError(SystemError("read", c.path, e))
            }
            var offset = 0
            var number = c.first
            var holes: [Hole] = []
            var cutAt: Int? = nil
            content.withUnsafeBytes { raw in
                while offset < c.size {
                    let problem: String
                    if let h = SpoolFiles.header(raw, at: offset) {
                        let whole = offset + h.recordSize <= c.size
                        if h.number == number, whole, SpoolFiles.crcMatches(raw, recordAt: offset, h) {
                            if number >= headRecord {
                                if head == nil { head = SpoolPosition(segment: c.first, offset: offset, record: number) }
                                live.records += 1
                                live.bytes += h.recordSize
                            }
                            offset += h.recordSize
                            number += 1
                            continue
                        }
                        if h.number > number, h.number < upper, whole, SpoolFiles.crcMatches(raw, recordAt: offset, h) {
                            // Whole records missing with no damaged byte: a gap in the numbers.
                            let lost = undelivered(number, h.number)
                            damaged += lost
                            recovery.notes.append("\(name): record \(h.number) at offset \(offset) where \(number) was expected; "
                                                  + "\(lost) events lost")
                            holes.append(Hole(start: offset, end: offset, record: h.number, lost: h.number - number))
                            number = h.number
                            continue
                        }
                        problem = !whole ? "a torn record" : h.number != number ? "record \(h.number) where \(number) was expected"
                            : "a record whose checksum does not match"
                    } else {
                        let left = c.size - offset
                        let magic = left >= 4 ? SpoolFiles.get32(raw, offset) : 0
                        problem = left < SpoolFiles.legacyHeaderSize || (magic == SpoolFiles.recordMagic && left < SpoolFiles.headerSize)
                            ? "a torn record header" : "bytes that are not a record"
                    }
                    if let found = SpoolFiles.resync(raw, from: offset + 1, numbers: number..<upper) {
                        // Damage in the middle: only the records it hit are lost.
                        let lost = undelivered(number, found.header.number)
                        damaged += lost
                        recovery.notes.append("\(name): \(problem) at offset \(offset); bytes \(offset)-\(found.offset - 1) are damaged "
                                              + "(bit rot or an outside write, not a torn write): \(lost) events lost "
                                              + "(records \(number)-\(found.header.number - 1)); reading goes on at record "
                                              + "\(found.header.number) (offset \(found.offset))")
                        holes.append(Hole(start: offset, end: found.offset, record: found.header.number, lost: found.header.number - number))
                        offset = found.offset
                        number = found.header.number
                        continue
                    }
                    if isLast {
                        // The damage reaches the end of the last segment: a write a crash or power cut interrupted.
                        recovery.notes.append("\(name): \(problem) at offset \(offset); \(c.size - offset) bytes cut off "
                                              + "(a write that a crash or power cut interrupted)")
                        cutAt = offset
                    } else {
                        // The end of a segment that is not the last is damaged: its remaining records are lost.
                        let resume = max(upper, number)
                        let lost = undelivered(number, resume)
                        damaged += lost
                        recovery.notes.append("\(name): \(problem) at offset \(offset); the rest of the segment (\(c.size - offset) bytes) "
                                              + "is damaged (bit rot or an outside write): \(lost) events lost")
                        holes.append(Hole(start: offset, end: c.size, record: resume, lost: resume - number))
                        offset = c.size
                        number = resume
                    }
                    break
                }
            }
            var size = c.size
            if let cutAt {
                let truncated = retryOnInterrupt { ftruncate(c.fd, off_t(cutAt)) }.flatMap { _ in retryOnInterrupt { fdatasync(c.fd) } }
                if case .failure(let e) = truncated {
                    for s in segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
                    for rest in candidates[n...] { closeFile(rest.fd, rest.path, logger) }
                    throw SpoolError(SystemError("truncate", c.path, e))
                }
                size = cutAt
            }
            segments.append(Segment(first: c.first, fd: c.fd, size: size, durableSize: size, holes: holes))
            expected = number
        }
        let next = max(headRecord, 1, expected ?? 1)
        var state = State(head: SpoolPosition(segment: segments.last?.first ?? next, offset: segments.last?.size ?? 0, record: next),
                          nextRecord: next, durableEnd: next)
        if let head { state.head = head }
        state.segments = segments
        state.headGeneration = storedHead?.generation ?? 0
        state.depth.records = live.records
        state.depth.bytes = live.bytes
        state.depth.recovered = live.records
        state.depth.droppedDamaged = damaged
        state.persistedHead = headRecord
        state.headDirty = state.head.record != headRecord
        recovery.records = live.records
        recovery.damaged = damaged
        // Remove segments wholly delivered; also empty non-last ones.
        var removed: [Segment] = []
        while state.segments.count > 1, state.segments[0].first < state.head.segment {
            removed.append(state.segments.removeFirst())
        }
        for seg in removed {
            let path = directory + "/" + SpoolFiles.segmentName(seg.first)
            closeFile(seg.fd, path, logger)
            removeFile(path, logger)
        }
        if !removed.isEmpty, let e = syncDirectory(directory) {
            for s in state.segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
            throw SpoolError(e)
        }
        return (state, recovery)
    }
}

/// pread(2) until `buffer` is full; false on an error or end of file first.
func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Bool {
    guard let base = buffer.baseAddress else { return buffer.count == 0 }
    var done = 0
    while done < buffer.count {
        let r = retryOnInterrupt { pread(fd, base + done, buffer.count - done, off_t(offset + done)) }
        guard case .success(let n) = r, n > 0 else { return false }
        done += n
    }
    return true
}

func preadAll(_ fd: Int32, _ buffer: inout [UInt8], offset: Int) -> Bool {
    buffer.withUnsafeMutableBytes { preadAll(fd, $0, offset: offset) }
}

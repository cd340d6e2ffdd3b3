import Core
import Platform
import Synchronization
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
    /// Wall-clock time it was spooled, nanoseconds since the epoch.
    public let spooledAt: Int64
    public let payload: [UInt8]
    /// The position right after this record: where reading goes on, and what `acknowledge` takes.
    public let next: SpoolPosition
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
    public var records: UInt64
    public var bytes: Int
    /// Dropped because the spool was full (oldest first), because they were older than the age limit,
    /// and because they were found damaged when read back.
    public var droppedFull: UInt64
    public var droppedExpired: UInt64
    public var droppedDamaged: UInt64
    /// Recovered when the spool was opened (records not yet acknowledged before the last stop).
    public var recovered: UInt64

    public var dropped: UInt64 { droppedFull + droppedExpired + droppedDamaged }
}

/// Why the spool cannot work: the file or directory and the errno.
public struct SpoolError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    init(_ error: SystemError) { self.message = "mqtt-spool: " + error.description }
    public var description: String { message }
}

/// File names and the record layout.
public enum SpoolFiles {
    /// Record header (little-endian): magic u32 "SGR1", payload length u32, record number u64,
    /// spooled-at i64 (wall-clock ns), CRC-32 u32 of bytes 4..<24 and the payload. Then the payload.
    public static let headerSize = 28
    public static let recordMagic: UInt32 = 0x3152_4753
    /// Head file: two 24-byte slots, written in turn: magic u32 "SGH1", generation u64, the first
    /// record not yet delivered u64, CRC-32 u32 of bytes 4..<20. The valid slot with the higher generation wins,
    /// so a torn write of one slot leaves the other.
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

    static func encode(number: UInt64, time: Int64, payload: [UInt8], into out: inout [UInt8]) {
        var header = [UInt8](repeating: 0, count: headerSize)
        put32(&header, 0, recordMagic)
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
        var length: Int
        var number: UInt64
        var time: Int64
        var crc: UInt32
    }

    /// The header at `offset` of `bytes`, if its magic and length are plausible.
    static func header(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Header? {
        guard bytes.count - offset >= headerSize, get32(bytes, offset) == recordMagic else { return nil }
        let length = Int(get32(bytes, offset + 4))
        guard length <= maxPayload else { return nil }
        return Header(length: length, number: get64(bytes, offset + 8), time: Int64(bitPattern: get64(bytes, offset + 16)),
                      crc: get32(bytes, offset + 24))
    }

    static func crcMatches(_ bytes: UnsafeRawBufferPointer, recordAt offset: Int, _ h: Header) -> Bool {
        var crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 24)]))
        crc = CRC32.update(crc, UnsafeRawBufferPointer(rebasing: bytes[(offset + headerSize)..<(offset + headerSize + h.length)]))
        return crc == h.crc
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
/// again (consumers drop them by id), none is lost. A torn last record (power cut during a write) fails
/// its checksum when the spool is opened and is cut off.
///
/// Bounds: when a new record would make the undelivered bytes exceed `maxBytes`, the oldest records are
/// dropped first; records older than `maxAgeNanoseconds` are dropped by `expire`. Each drop is counted
/// and logged (rate-limited). Disk use is at most `maxBytes` plus one segment's delivered prefix.
///
/// Threads: one appender (the spool thread) and one reader (the session thread); every method is safe
/// from any thread. The appender's write and fdatasync run outside the lock.
public final class EventSpool: Sendable {
    public let directory: String
    public let limits: SpoolLimits
    private let logger: Logger
    private let state: Mutex<State>
    private let lockFD: Int32
    private let headFD: Int32

    /// Records before this wall-clock time (2025-01-01) have a clock that was not set (a Pi without a
    /// battery clock before NTP): they are never dropped for age, since their age is unknown.
    static let plausibleWallClockFloor: Int64 = 1_735_689_600 * 1_000_000_000

    struct Segment {
        let first: UInt64
        let fd: Int32
        /// Bytes written (and reserved by an append in progress).
        var size: Int
        /// Bytes known to be on disk and readable.
        var durableSize: Int
    }

    struct State {
        var segments: [Segment] = []
        var head: SpoolPosition
        var nextRecord: UInt64
        /// The first record not yet durable (records below it may be read).
        var durableEnd: UInt64
        var depth = SpoolDepth(records: 0, bytes: 0, droppedFull: 0, droppedExpired: 0, droppedDamaged: 0, recovered: 0)
        var headGeneration: UInt64 = 0
        var persistedHead: UInt64 = 0
        var headDirty = false
        var closed = false
    }

    /// What opening found, for the log.
    public struct Recovery: Sendable {
        public var records: UInt64 = 0
        public var notes: [String] = []
    }
    public let recovery: Recovery

    /// Opens (or creates) the spool in `directory` and recovers it: segments are checked record by record,
    /// a torn or damaged tail is cut off, delivered segments are removed. Takes an exclusive lock on the
    /// directory (`lock`), so a second spool on it, in this process or another, fails.
    public init(directory: String, limits: SpoolLimits, logger: Logger) throws(SpoolError) {
        self.directory = directory
        self.limits = limits
        self.logger = logger
        try EventSpool.makeDirectory(directory)

        let lockPath = directory + "/lock"
        let lock: Int32
        switch FileDescriptor.open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode: 0o600) {
        case .success(let fd): lock = fd.rawValue
        case .failure(let e): throw SpoolError(SystemError("open", lockPath, e))
        }
        if flock(lock, LOCK_EX | LOCK_NB) != 0 {
            let e = Errno.current
            Glibc.close(lock)
            throw SpoolError("mqtt-spool \(directory): in use by another scangate or MQTT output (flock \(lockPath): \(e)); "
                             + "give each output its own spool directory")
        }
        let headPath = directory + "/head"
        let head: Int32
        switch FileDescriptor.open(headPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode: 0o600) {
        case .success(let fd): head = fd.rawValue
        case .failure(let e):
            Glibc.close(lock)
            throw SpoolError(SystemError("open", headPath, e))
        }
        var headInfo = stat()
        guard fstat(head, &headInfo) == 0, headInfo.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(head)
            Glibc.close(lock)
            throw SpoolError("mqtt-spool \(directory): \(headPath) is not a regular file; remove it (the spool makes its own)")
        }
        do throws(SpoolError) {
            let (state, recovery) = try EventSpool.recover(directory: directory, headFD: head)
            self.state = Mutex(state)
            self.recovery = recovery
        } catch {
            Glibc.close(head)
            Glibc.close(lock)
            throw error
        }
        self.lockFD = lock
        self.headFD = head
        for note in recovery.notes { logger.warning("mqtt spool \(directory): \(note)") }
        if recovery.records > 0 {
            logger.notice("mqtt spool \(directory): \(recovery.records) events not yet acknowledged by the broker will be sent again")
        }
    }

    deinit { close() }

    /// Writes the head, syncs, closes every file and releases the directory lock. Called once; later calls do nothing.
    public func close() {
        let fds: [Int32]? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            writeHeadLocked(&s, sync: true)
            return s.segments.map(\.fd)
        }
        guard let fds else { return }
        for fd in fds { Glibc.close(fd) }
        Glibc.close(headFD)
        Glibc.close(lockFD)
    }

    /// Closes the files without writing the head: what a crash leaves behind (for tests).
    func abandon() {
        let fds: [Int32]? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.segments.map(\.fd)
        }
        guard let fds else { return }
        for fd in fds { Glibc.close(fd) }
        Glibc.close(headFD)
        Glibc.close(lockFD)
    }

    public var depth: SpoolDepth { state.withLock { $0.depth } }
    public var head: SpoolPosition { state.withLock { $0.head } }

    // MARK: - Append

    /// Appends `payloads` in order, spooled at `wallTime`, and makes them durable (write + fdatasync)
    /// before they can be read. Drops the oldest records first when the spool would exceed its size.
    /// Returns the number of records dropped to make room. One thread appends.
    @discardableResult
    public func append(_ payloads: [[UInt8]], wallTime: Int64) throws(SpoolError) -> Int {
        guard !payloads.isEmpty else { return 0 }
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
                    guard dropHeadLocked(&s, reason: .full) else { break }
                    dropped += 1
                }
                SpoolFiles.encode(number: s.nextRecord, time: wallTime, payload: p, into: &bytes)
                s.nextRecord += 1
                s.depth.bytes += size
            }
            let index = s.segments.count - 1
            let offset = s.segments[index].size
            s.segments[index].size += bytes.count
            return (s.segments[index].fd, offset, directory + "/" + SpoolFiles.segmentName(s.segments[index].first), s.nextRecord)
        }
        guard let plan else { throw SpoolError("mqtt-spool \(directory): closed") }
        // Phase 2, unlocked: write and sync.
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                retryOnInterrupt { pwrite(plan.fd, raw.baseAddress! + written, raw.count - written, off_t(plan.offset + written)) }
            }
            switch n {
            case .success(let count): written += count
            case .failure(let e):
                rollBack(fd: plan.fd, offset: plan.offset, count: payloads.count, bytes: bytes.count)
                throw SpoolError(SystemError("write", plan.path, e))
            }
        }
        if case .failure(let e) = retryOnInterrupt({ fdatasync(plan.fd) }) {
            rollBack(fd: plan.fd, offset: plan.offset, count: payloads.count, bytes: bytes.count)
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
    private func rollBack(fd: Int32, offset: Int, count: Int, bytes: Int) {
        state.withLock { s in
            guard let i = s.segments.firstIndex(where: { $0.fd == fd }), s.segments[i].size == offset + bytes else { return }
            s.segments[i].size = offset
            s.nextRecord -= UInt64(count)
            s.depth.bytes -= bytes
        }
        _ = ftruncate(fd, off_t(offset))
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
            Glibc.close(fd)
            unlink(path)
            throw SpoolError(error)
        }
        // An empty active segment that is replaced would otherwise stay behind.
        if let last = s.segments.last, last.size == 0 {
            Glibc.close(last.fd)
            unlink(directory + "/" + SpoolFiles.segmentName(last.first))
            s.segments.removeLast()
        }
        s.segments.append(Segment(first: first, fd: fd, size: 0, durableSize: 0))
        if s.segments.count == 1 || !s.segments.contains(where: { $0.first == s.head.segment }) {
            s.head = SpoolPosition(segment: first, offset: 0, record: max(s.head.record, first))
        }
        normalizeHeadLocked(&s)
    }

    // MARK: - Read and acknowledge

    /// Up to `maxCount` durable records from `position` (nil: the head), at most about `maxBytes`.
    /// A position the head has passed (records dropped meanwhile) reads from the head.
    public func read(from position: SpoolPosition?, maxCount: Int, maxBytes: Int = 1 << 20) -> [SpoolRecord] {
        state.withLock { s in
            guard !s.closed else { return [] }
            var at = position.map { $0.record < s.head.record ? s.head : $0 } ?? s.head
            var out: [SpoolRecord] = []
            var bytes = 0
            while out.count < maxCount, bytes < maxBytes, at.record < s.durableEnd {
                guard let i = s.segments.firstIndex(where: { $0.first == at.segment }) else {
                    // The segment is gone (dropped): go on at the head.
                    if at == s.head { break }
                    at = s.head
                    continue
                }
                let segment = s.segments[i]
                if at.offset >= segment.durableSize {
                    guard i + 1 < s.segments.count else { break }
                    at = SpoolPosition(segment: s.segments[i + 1].first, offset: 0, record: max(at.record, s.segments[i + 1].first))
                    continue
                }
                switch readRecord(segment, at: at) {
                case .record(let r):
                    out.append(r)
                    bytes += r.payload.count
                    at = r.next
                case .damaged(let reason):
                    // Bit rot or an outside write after the record was synced: skip the rest of this segment.
                    logger.error("mqtt spool \(directory)/\(SpoolFiles.segmentName(segment.first)): \(reason) at offset \(at.offset); "
                                 + "the rest of this segment is skipped", rateLimitKey: "mqtt-spool-damaged")
                    s.depth.droppedDamaged += skipDamagedLocked(&s, index: i, from: at)
                    guard let later = s.segments.first(where: { $0.first > segment.first }) else { return out }
                    at = SpoolPosition(segment: later.first, offset: 0, record: later.first)
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
        var header = [UInt8](repeating: 0, count: SpoolFiles.headerSize)
        guard preadAll(segment.fd, &header, offset: position.offset) else { return .damaged("a short read of a record header") }
        guard let h = header.withUnsafeBytes({ SpoolFiles.header($0, at: 0) }) else { return .damaged("a record header that is not valid") }
        guard h.number == position.record else { return .damaged("record \(h.number) where \(position.record) was expected") }
        let end = position.offset + SpoolFiles.headerSize + h.length
        guard end <= segment.durableSize else { return .damaged("a record that runs past the end of what was written") }
        var whole = header + [UInt8](repeating: 0, count: h.length)
        guard whole.withUnsafeMutableBytes({ raw in
            preadAll(segment.fd, UnsafeMutableRawBufferPointer(rebasing: raw[SpoolFiles.headerSize...]), offset: position.offset + SpoolFiles.headerSize)
        }) else { return .damaged("a short read of a record") }
        guard whole.withUnsafeBytes({ SpoolFiles.crcMatches($0, recordAt: 0, h) }) else { return .damaged("a record whose checksum does not match") }
        let next = SpoolPosition(segment: segment.first, offset: end, record: h.number + 1)
        return .record(SpoolRecord(number: h.number, spooledAt: h.time, payload: Array(whole[SpoolFiles.headerSize...]), next: next))
    }

    /// The broker acknowledged every record before `next`: the head moves there; segments wholly
    /// before it are removed. The head file is written later (`persistHead`).
    public func acknowledge(upTo next: SpoolPosition) {
        state.withLock { s in
            guard !s.closed, next.record > s.head.record, next.record <= s.durableEnd else { return }
            let (records, bytes) = spanLocked(s, from: s.head, to: next)
            s.depth.records -= min(s.depth.records, records)
            s.depth.bytes -= min(s.depth.bytes, bytes)
            s.head = next
            s.headDirty = true
            normalizeHeadLocked(&s)
        }
    }

    /// Records and bytes from `a` to `b` (both positions of records, a <= b).
    private func spanLocked(_ s: State, from a: SpoolPosition, to b: SpoolPosition) -> (UInt64, Int) {
        let records = b.record - a.record
        if a.segment == b.segment { return (records, b.offset - a.offset) }
        var bytes = 0
        for seg in s.segments {
            if seg.first == a.segment { bytes += seg.size - a.offset }
            else if seg.first > a.segment && seg.first < b.segment { bytes += seg.size }
            else if seg.first == b.segment { bytes += b.offset }
        }
        return (records, bytes)
    }

    /// Moves a head that sits at the end of a segment to the start of the next one, and removes the
    /// segments wholly behind the head (never the last, active one).
    private func normalizeHeadLocked(_ s: inout State) {
        while let i = s.segments.firstIndex(where: { $0.first == s.head.segment }), i + 1 < s.segments.count,
              s.head.offset >= s.segments[i].size {
            let next = s.segments[i + 1].first
            s.head = SpoolPosition(segment: next, offset: 0, record: max(s.head.record, next))
        }
        while s.segments.count > 1, s.segments[0].first < s.head.segment {
            let first = s.segments.removeFirst()
            Glibc.close(first.fd)
            unlink(directory + "/" + SpoolFiles.segmentName(first.first))
        }
    }

    // MARK: - Drops

    enum DropReason { case full, expired }

    /// Drops the record at the head; false when there is none that can be read.
    private func dropHeadLocked(_ s: inout State, reason: DropReason) -> Bool {
        normalizeHeadLocked(&s)
        guard s.head.record < s.durableEnd, let i = s.segments.firstIndex(where: { $0.first == s.head.segment }),
              s.head.offset < s.segments[i].durableSize else { return false }
        var header = [UInt8](repeating: 0, count: SpoolFiles.headerSize)
        let h = preadAll(s.segments[i].fd, &header, offset: s.head.offset) ? header.withUnsafeBytes { SpoolFiles.header($0, at: 0) } : nil
        guard let h, h.number == s.head.record else {
            s.depth.droppedDamaged += skipDamagedLocked(&s, index: i, from: s.head)
            return true
        }
        let size = SpoolFiles.headerSize + h.length
        s.head = SpoolPosition(segment: s.head.segment, offset: s.head.offset + size, record: h.number + 1)
        s.headDirty = true
        s.depth.records -= min(1, s.depth.records)
        s.depth.bytes -= min(size, s.depth.bytes)
        let total: UInt64
        let why: String
        switch reason {
        case .full:
            s.depth.droppedFull += 1
            total = s.depth.droppedFull
            why = "the spool is full (mqtt-spool-max-mb = \(limits.maxBytes >> 20) MiB): dropped the oldest event"
        case .expired:
            s.depth.droppedExpired += 1
            total = s.depth.droppedExpired
            why = "dropped an event older than mqtt-spool-max-age-h (\(limits.maxAgeNanoseconds / 3_600_000_000_000) h)"
        }
        logger.warning("mqtt spool \(directory): \(why) (record \(h.number), spooled \(WallClock.rfc3339(nanoseconds: h.time))); "
                       + "\(total) dropped so far for this reason", rateLimitKey: "mqtt-spool-drop-\(reason)")
        normalizeHeadLocked(&s)
        return true
    }

    /// Damaged data from `position` in segment `index` (bit rot, or an outside write after the records
    /// were synced): the rest of that segment is lost. Returns how many records that is (by number).
    private func skipDamagedLocked(_ s: inout State, index: Int, from position: SpoolPosition) -> UInt64 {
        let isLast = index + 1 == s.segments.count
        let nextFirst = isLast ? s.durableEnd : s.segments[index + 1].first
        let skipped = nextFirst > position.record ? nextFirst - position.record : 0
        let bytes = max(0, s.segments[index].size - position.offset)
        s.depth.records -= min(skipped, s.depth.records)
        s.depth.bytes -= min(bytes, s.depth.bytes)
        if isLast {
            // The active segment: cut where the damage starts; appending goes on from there.
            _ = ftruncate(s.segments[index].fd, off_t(position.offset))
            s.segments[index].size = position.offset
            s.segments[index].durableSize = position.offset
            s.head = SpoolPosition(segment: s.segments[index].first, offset: position.offset, record: s.durableEnd)
        } else {
            s.segments[index].size = position.offset
            s.segments[index].durableSize = position.offset
            if s.head.segment == s.segments[index].first {
                s.head = SpoolPosition(segment: s.segments[index + 1].first, offset: 0, record: s.segments[index + 1].first)
            }
        }
        s.headDirty = true
        normalizeHeadLocked(&s)
        return skipped
    }

    /// Drops records spooled before `now - maxAge` (wall clock). Returns how many were dropped.
    @discardableResult
    public func expire(now: Int64 = WallClock.nowNanoseconds()) -> Int {
        guard limits.maxAgeNanoseconds > 0, now > EventSpool.plausibleWallClockFloor else { return 0 }
        let cutoff = now - limits.maxAgeNanoseconds
        return state.withLock { s in
            var dropped = 0
            while !s.closed, s.head.record < s.durableEnd, let time = headTimeLocked(s),
                  time >= EventSpool.plausibleWallClockFloor, time < cutoff {
                guard dropHeadLocked(&s, reason: .expired) else { break }
                dropped += 1
            }
            return dropped
        }
    }

    private func headTimeLocked(_ s: State) -> Int64? {
        guard var i = s.segments.firstIndex(where: { $0.first == s.head.segment }) else { return nil }
        var offset = s.head.offset
        if offset >= s.segments[i].durableSize {
            guard i + 1 < s.segments.count else { return nil }
            i += 1
            offset = 0
        }
        var header = [UInt8](repeating: 0, count: SpoolFiles.headerSize)
        guard preadAll(s.segments[i].fd, &header, offset: offset) else { return nil }
        return header.withUnsafeBytes { SpoolFiles.header($0, at: 0) }?.time
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
        let ok = slot.withUnsafeBytes { raw in
            if case .success(let n) = retryOnInterrupt({ pwrite(headFD, raw.baseAddress, raw.count, offset) }) { return n == raw.count }
            return false
        }
        if !ok {
            logger.error("mqtt spool \(directory)/head: cannot write the head: \(Errno.current) (events may be sent again after a restart)",
                         rateLimitKey: "mqtt-spool-head")
            return
        }
        if sync { _ = retryOnInterrupt { fdatasync(headFD) } }
        s.persistedHead = s.head.record
        s.headDirty = false
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

    static func readHead(_ fd: Int32) -> UInt64? {
        var bytes = [UInt8](repeating: 0, count: 2 * SpoolFiles.headSlotSize)
        let n = bytes.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress, raw.count, 0) }
        guard n > 0 else { return nil }
        var best: (generation: UInt64, record: UInt64)?
        bytes.withUnsafeBytes { raw in
            for slot in 0..<2 where (slot + 1) * SpoolFiles.headSlotSize <= n {
                let o = slot * SpoolFiles.headSlotSize
                guard SpoolFiles.get32(raw, o) == SpoolFiles.headMagic else { continue }
                let crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: raw[(o + 4)..<(o + 20)]))
                guard crc == SpoolFiles.get32(raw, o + 20) else { continue }
                let generation = SpoolFiles.get64(raw, o + 4), record = SpoolFiles.get64(raw, o + 12)
                if generation > best?.generation ?? 0 || best == nil { best = (generation, record) }
            }
        }
        return best?.record
    }

    /// Scans every segment, cuts torn or damaged tails, finds the head, removes delivered segments.
    static func recover(directory: String, headFD: Int32) throws(SpoolError) -> (State, Recovery) {
        var recovery = Recovery()
        let headRecord = readHead(headFD) ?? 0
        var segments: [Segment] = []
        var expected: UInt64? = nil
        var head: SpoolPosition? = nil
        var live: (records: UInt64, bytes: Int) = (0, 0)
        var lastRecord: UInt64? = nil
        for first in try listSegments(directory) {
            let path = directory + "/" + SpoolFiles.segmentName(first)
            if let e = expected, first < e {
                recovery.notes.append("\(SpoolFiles.segmentName(first)) overlaps the segment before it; left in place and not read")
                continue
            }
            // Only a regular file of at most a segment's size is read (issue 16: every input bounded); a symlink,
            // a FIFO or a device put in the spool's place is left alone and said so, and blocks nothing.
            let fd: Int32
            switch FileDescriptor.open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) {
            case .success(let d): fd = d.rawValue
            case .failure(let e) where e.rawValue == ELOOP || e.rawValue == ENXIO || e.rawValue == EISDIR:
                recovery.notes.append("\(SpoolFiles.segmentName(first)) is not a regular file (\(e)); left in place and not read")
                continue
            case .failure(let e): throw SpoolError(SystemError("open", path, e))
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let e = Errno.current
                Glibc.close(fd)
                throw SpoolError(SystemError("fstat", path, e))
            }
            guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= 0, Int(info.st_size) <= SpoolFiles.maxSegmentFileBytes else {
                recovery.notes.append(info.st_mode & S_IFMT == S_IFREG
                    ? "\(SpoolFiles.segmentName(first)) is \(info.st_size) bytes, over a segment's \(SpoolFiles.maxSegmentFileBytes); left in place and not read"
                    : "\(SpoolFiles.segmentName(first)) is not a regular file; left in place and not read")
                Glibc.close(fd)
                continue
            }
            // Back to blocking I/O for a regular file (O_NONBLOCK only kept a FIFO's open from waiting).
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
                let e = Errno.current
                Glibc.close(fd)
                throw SpoolError(SystemError("fcntl", path, e))
            }
            let fileSize = Int(info.st_size)
            var content = [UInt8](repeating: 0, count: fileSize)
            guard content.withUnsafeMutableBytes({ preadAll(fd, $0, offset: 0) }) else {
                let e = Errno.current
                Glibc.close(fd)
                throw SpoolError(SystemError("read", path, e))
            }
            var offset = 0
            var number = first
            var problem: String?
            content.withUnsafeBytes { raw in
                while offset < fileSize {
                    guard let h = SpoolFiles.header(raw, at: offset) else {
                        problem = fileSize - offset < SpoolFiles.headerSize ? "a torn record header" : "bytes that are not a record"
                        break
                    }
                    guard h.number == number else { problem = "record \(h.number) where \(number) was expected"; break }
                    guard offset + SpoolFiles.headerSize + h.length <= fileSize else { problem = "a torn record"; break }
                    guard SpoolFiles.crcMatches(raw, recordAt: offset, h) else { problem = "a record whose checksum does not match"; break }
                    let size = SpoolFiles.headerSize + h.length
                    if number >= headRecord {
                        if head == nil { head = SpoolPosition(segment: first, offset: offset, record: number) }
                        live.records += 1
                        live.bytes += size
                    }
                    offset += size
                    number += 1
                }
            }
            if let problem {
                recovery.notes.append("\(SpoolFiles.segmentName(first)): \(problem) at offset \(offset); "
                                      + "\(fileSize - offset) bytes cut off (a write that a crash or power cut interrupted)")
                guard ftruncate(fd, off_t(offset)) == 0, fdatasync(fd) == 0 else {
                    let e = Errno.current
                    Glibc.close(fd)
                    throw SpoolError(SystemError("truncate", path, e))
                }
            }
            if number > first { lastRecord = number - 1 }
            segments.append(Segment(first: first, fd: fd, size: offset, durableSize: offset))
            expected = number
        }
        let next = max((lastRecord.map { $0 + 1 }) ?? 1, headRecord, 1, expected ?? 1)
        var state = State(head: head ?? SpoolPosition(segment: segments.last?.first ?? next, offset: segments.last?.size ?? 0, record: next),
                          nextRecord: next, durableEnd: next)
        if head == nil, let last = segments.last {
            // Everything was delivered: the head is at the end of the last segment.
            state.head = SpoolPosition(segment: last.first, offset: last.size, record: next)
        }
        state.segments = segments
        state.depth.records = live.records
        state.depth.bytes = live.bytes
        state.depth.recovered = live.records
        state.persistedHead = headRecord
        state.headDirty = state.head.record != headRecord
        recovery.records = live.records
        // Remove segments wholly delivered; also empty non-last ones.
        var removed: [Segment] = []
        while state.segments.count > 1, state.segments[0].first < state.head.segment {
            removed.append(state.segments.removeFirst())
        }
        for seg in removed {
            Glibc.close(seg.fd)
            unlink(directory + "/" + SpoolFiles.segmentName(seg.first))
        }
        if !removed.isEmpty, let e = syncDirectory(directory) { throw SpoolError(e) }
        return (state, recovery)
    }
}

/// pread(2) until `buffer` is full; false on an error or end of file first.
func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Bool {
    var done = 0
    while done < buffer.count {
        let r = retryOnInterrupt { pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done)) }
        guard case .success(let n) = r, n > 0 else { return false }
        done += n
    }
    return true
}

func preadAll(_ fd: Int32, _ buffer: inout [UInt8], offset: Int) -> Bool {
    buffer.withUnsafeMutableBytes { preadAll(fd, $0, offset: offset) }
}

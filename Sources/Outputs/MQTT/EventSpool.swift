import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

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
    let logger: Logger
    /// Test failures of a record batch's write and fdatasync (a full disk); `.none` in service.
    let faults: WriteFaults
    let state: PosixMutex<State>
    let lockFD: Int32
    let headFD: Int32

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
        switch FileDescriptor(rawValue: lock).lock(.exclusive, nonBlocking: true) {
        case .success(true):
            break
        case .success(false):
            EventSpool.closeFile(lock, lockPath, logger)
            throw SpoolError("mqtt-spool \(directory): in use by another scangate or MQTT output (flock \(lockPath): \(Errno.wouldBlock)); "
                             + "give each output its own spool directory", lockBusy: true)
        case .failure(let e):
            EventSpool.closeFile(lock, lockPath, logger)
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

    func closeFiles(_ fds: [(Int32, String)]) {
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
        let fd = FileDescriptor(rawValue: plan.fd)
        if case .failure(let e) = faults.write?(plan.path).map({ Result<Void, Errno>.failure($0) })
            ?? fd.writeAll(toAbsoluteOffset: plan.offset, bytes) {
            rollBack(fd: plan.fd, path: plan.path, offset: plan.offset, count: payloads.count, bytes: bytes.count)
            throw SpoolError(SystemError("write", plan.path, e))
        }
        if case .failure(let e) = faults.sync?(plan.path).map({ Result<Void, Errno>.failure($0) }) ?? fd.dataSync() {
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
    func rollBack(fd: Int32, path: String, offset: Int, count: Int, bytes: Int) {
        let undone: Bool = state.withLock { s in
            guard let i = s.segments.firstIndex(where: { $0.fd == fd }), s.segments[i].size == offset + bytes else { return false }
            s.segments[i].size = offset
            s.nextRecord -= UInt64(count)
            s.depth.bytes -= bytes
            return true
        }
        guard undone else { return }
        if case .failure(let e) = FileDescriptor(rawValue: fd).truncate(to: offset) {
            // The next batch is written over these bytes; any left past it is a torn tail, cut at the next open.
            logger.error("mqtt spool \(path): cannot cut back a failed write (ftruncate: \(e)); the next write goes over it",
                         rateLimitKey: "mqtt-spool-truncate")
        }
    }

    func startSegmentLocked(_ s: inout State) throws(SpoolError) {
        let first = s.nextRecord
        let path = directory + "/" + SpoolFiles.segmentName(first)
        let fd: Int32
        switch FileDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600) {
        case .success(let d): fd = d.rawValue
        case .failure(let e): throw SpoolError(SystemError("create", path, e))
        }
        // The new file's directory entry is durable before any record goes into it.
        do throws(SystemError) { try Directory.sync(directory) } catch {
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
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Settings

/// What identifies one pass for one-time use: 16 bytes of SHA-256 over the format, the issuer and the
/// jti (JWT) or cti (CWT). RFC 7519 asks issuers to keep jti unique across issuers too; the issuer is in
/// the digest anyway, so two issuers' equal jti values never collide here.
public struct ReplayKey: Hashable, Sendable {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public static func make(format: CredentialFormat, issuer: String?, tokenID: [UInt8]) throws(CryptoError) -> ReplayKey {
        var input = Array("scangate-replay-1".utf8) + [0] + Array(format.rawValue.utf8) + [0]
        input += Array((issuer ?? "").utf8) + [0] + tokenID
        let digest = try CryptoDigest.sha256(input)
        return ReplayKey(bytes: Array(digest.prefix(16)))
    }

    /// A presentation (credential-holder-binding), by the SHA-256 of its key-binding JWT: a domain of its
    /// own, so it never equals a pass's key.
    public static func make(presentation digest: [UInt8]) throws(CryptoError) -> ReplayKey {
        let input = Array("scangate-presentation-1".utf8) + [0] + digest
        return ReplayKey(bytes: Array(try CryptoDigest.sha256(input).prefix(16)))
    }

    init(bytes: [UInt8]) {
        var h: UInt64 = 0, l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(bytes[i]) }
        high = h
        low = l
    }

    var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * $0)) }
    }
}

/// The store could not be opened or read: names the file and what to do.
public struct ReplayStoreError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let message: String
    public var description: String { "credential-replay-store \(path): \(message)" }
}

/// The clocks the one-time store judges an entry's age by: this boot's id and CLOCK_BOOTTIME, which no
/// clock step moves. The wall clock comes in with each consume (the policy's `now`).
public struct ReplayClock: Sendable {
    /// Seconds since this boot (CLOCK_BOOTTIME: monotonic, counts suspend).
    public var boot: @Sendable () -> Int64
    /// Wall-clock seconds since the epoch; used only to carry a first-format record over (see ReplayStore).
    public var wall: @Sendable () -> Int64
    /// nil when the kernel's boot id cannot be read: every record read from the file is then treated as
    /// another boot's.
    public var bootID: BootID?

    public init(boot: @escaping @Sendable () -> Int64, wall: @escaping @Sendable () -> Int64, bootID: BootID?) {
        self.boot = boot
        self.wall = wall
        self.bootID = bootID
    }

    public static func system() -> ReplayClock {
        ReplayClock(boot: { Int64(BootTime.nowNanoseconds() / 1_000_000_000) },
                    wall: { WallClock.nowNanoseconds() / 1_000_000_000 },
                    bootID: try? BootID.current().get())
    }
}

/// The passes one-time use has consumed, in an append-only file that survives a restart and a power cut.
///
/// The file is a sequence of 64-byte records: `SGO2`, the wall-clock time until which the entry is held
/// (8 bytes big-endian), the 16-byte ReplayKey, the boot id (16 bytes, zero when unknown), the boot
/// clock when the record was written (8 bytes) and how many seconds that boot clock must count from then
/// before the entry may go (8 bytes), and a CRC-32 of the first 60 bytes. Files of the first format
/// (32-byte `SGR1` records: the expiry alone) are still read.
///
/// **Held long enough for every consumer.** The caller holds an entry until the pass's exp plus the
/// largest leeway any consumer of the file may apply (credential-leeway-s at most 3600) plus one second:
/// a pass used by a gate with leeway 0 is still refused by the daemon with leeway 30 after exp.
///
/// **Dropped only when both clocks agree.** An entry is dropped once the wall clock has passed its time
/// and the boot clock has counted the time the pass still had when it was recorded. A wall clock stepped
/// forward (a bad NTP server, a battery clock wrong at boot) therefore erases nothing: the boot clock has
/// not moved. A record of another boot (the file outlived a reboot) cannot be judged by this boot's
/// clock, so its boot-clock count starts again when it is loaded.
///
/// A consume appends one record and `fdatasync`s it before it returns `.fresh`, so a read is accepted only
/// once its record is on disk. Each record is synced before the next is written, so only the last can be
/// torn (a kill -9 or power cut mid-write): a last record that is short or fails its CRC belongs to a read
/// that was never accepted, and is cut off at load. A bad record with good ones after it is corruption,
/// and the store refuses to load (fail closed). Every 256 consumes the entries both clocks agree on are
/// dropped, and when dropped records outnumber held ones the file is rewritten with the held ones only
/// (temp file, fsync, rename, fsync of the directory).
///
/// A second process may use the same file (`scangate credential verify --one-time` at a manual gate
/// beside the daemon): each consume holds an flock on PATH.lock, reads what others appended, and
/// reopens the file when another process compacted it. A write that fails leaves the read refused
/// (`.failed`); after a failed fsync the store stops accepting one-time passes until it is reopened,
/// since the kernel may have dropped the record. A full disk (ENOSPC, EDQUOT) is the exception: its
/// record is cut off (and, after a failed fsync, the cut synced), so the store stays open and accepts
/// passes again as soon as there is room, without a restart; a compaction that finds no room leaves
/// the old file as it was.
public final class ReplayStore: Sendable {
    public let path: String
    private let state: PosixMutex<State>
    private let clock: ReplayClock
    /// A test fault (SCANGATE_FAULT=park-at:replay-...): nil in service.
    private let parking: FaultParking?
    /// Test failures of the record's write and fdatasync (a full disk); `.none` in service.
    private let faults: WriteFaults

    static let recordSize = 64
    static let magic: [UInt8] = Array("SGO2".utf8)
    /// The first format: 32 bytes, `SGR1`, exp + leeway + 1, the key, a CRC-32.
    static let firstRecordSize = 32
    static let firstMagic: [UInt8] = Array("SGR1".utf8)
    /// The largest leeway a consumer may apply (credential-leeway-s); a first-format record, which holds
    /// exp + its consumer's leeway + 1, is held this much longer.
    static let maxLeewaySeconds: Int64 = Int64(CredentialSettings.leewayRange.upperBound)
    /// A first-format record carries no boot-clock count; it gets what its wall time leaves plus a day.
    static let firstFormatBootSlack: Int64 = 86_400
    /// Larger files are refused at load (a million records).
    static let maxFileBytes = 64 << 20
    /// More held entries than this and one-time passes are refused (the file would pass 64 MB).
    public static let maxLiveEntries = 1_000_000
    /// Appends between two passes over the entries that drop expired ones.
    static let pruneInterval = 256
    /// How long a consume waits for another process's lock before failing closed.
    static let lockWaitMilliseconds = 2000.0

    /// One consumed pass: held until the wall clock reaches `holdUntil` and this boot's clock reaches
    /// `bootDeadline` (seconds since this boot).
    struct Entry: Equatable {
        var holdUntil: Int64
        var bootDeadline: Int64

        func merged(_ other: Entry) -> Entry {
            Entry(holdUntil: max(holdUntil, other.holdUntil), bootDeadline: max(bootDeadline, other.bootDeadline))
        }

        func expired(wall: Int64, boot: Int64) -> Bool { wall >= holdUntil && boot >= bootDeadline }
    }

    /// A record as the file holds it.
    struct Record: Equatable {
        var key: ReplayKey
        var holdUntil: Int64
        /// nil: a first-format record, or one written where the boot id was unknown.
        var bootID: BootID?
        var bootAt: Int64
        var bootHold: Int64
        var firstFormat: Bool
    }

    struct State {
        /// The file; its `size` is the bytes already read into `entries`.
        var log: RecordLog
        var lock: OwnedFileDescriptor
        var records: Int
        var entries: [ReplayKey: Entry]
        /// Set after a failure that leaves the file's state unknown; every consume then fails.
        var broken: String?
        /// Appends since expired entries were last dropped from `entries`; starts at the threshold, so the
        /// first consume after a load prunes (and compacts when that pays).
        var appendsSincePrune = ReplayStore.pruneInterval
    }

    /// What a consume did.
    public enum Consumed: Equatable, Sendable {
        /// Recorded, and on disk: accept the read.
        case fresh
        /// Already consumed: refuse as replayed.
        case replayed
        /// Could not be recorded: refuse (fail closed) and log the reason.
        case failed(String)
    }

    /// Opens (creating it with mode 0600 if needed) and loads the store; a torn last record is cut off.
    /// Nothing is dropped at load.
    public init(path: String, clock: ReplayClock = .system(), parking: FaultParking? = FaultParking.fromEnvironment(),
                faults: WriteFaults = .none) throws(ReplayStoreError) {
        self.path = path
        self.clock = clock
        self.parking = parking
        self.faults = faults
        let lock = try Self.openLock(path)
        guard Self.takeLock(lock.fd) else {
            throw ReplayStoreError(path: path, message: "another process holds \(path).lock for more than \(Int(Self.lockWaitMilliseconds)) ms")
        }
        defer { Self.releaseLock(lock.fd) }
        self.state = PosixMutex(try Self.openAndLoad(path, lock: lock, clock: clock))
    }

    /// Entries held: consumed passes, including ones both clocks agree have expired but not yet dropped.
    public var entryCount: Int { state.withLock { $0.entries.count } }
    /// Records in the file, dropped ones included.
    public var fileRecords: Int { state.withLock { $0.records } }

    /// True when the pass was consumed and its entry is held. Does not record anything.
    public func contains(_ key: ReplayKey) -> Bool {
        state.withLock { $0.entries[key] != nil }
    }

    /// The time an entry is held until: `exp` plus the largest leeway any consumer may apply, plus 1 s.
    public static func holdUntil(expiresAt exp: Int64) -> Int64 {
        let (until, overflow) = exp.addingReportingOverflow(maxLeewaySeconds + 1)
        return overflow ? Int64.max : until
    }

    /// Consumes `key`, held until the wall clock reaches `holdUntil` (see `holdUntil(expiresAt:)`) and the
    /// boot clock has counted `holdUntil - now`: `.fresh` once it is durably recorded.
    public func consume(_ key: ReplayKey, holdUntil: Int64, now: Int64) -> Consumed {
        state.withLock { s in
            if let broken = s.broken { return .failed(broken) }
            guard Self.takeLock(s.lock.fd) else {
                return .failed("another process held \(path).lock for more than \(Int(Self.lockWaitMilliseconds)) ms")
            }
            defer { Self.releaseLock(s.lock.fd) }
            if let problem = catchUp(&s) {
                s.broken = problem
                return .failed(problem)
            }
            if s.entries[key] != nil { return .replayed }
            let boot = clock.boot()
            if s.entries.count >= Self.maxLiveEntries {
                Self.prune(&s, wall: now, boot: boot)
                guard s.entries.count < Self.maxLiveEntries else {
                    return .failed("\(Self.maxLiveEntries) passes are held in the store, its limit (lower credential-max-lifetime-s)")
                }
            }
            let (remaining, overflow) = holdUntil.subtractingReportingOverflow(now)
            let bootHold = overflow ? Int64.max : max(0, remaining)
            let entry = Entry(holdUntil: holdUntil, bootDeadline: Self.adding(boot, bootHold))
            let record = Self.record(key, holdUntil: holdUntil, bootID: clock.bootID, bootAt: boot, bootHold: bootHold)
            switch s.log.append(record, faults: faults, afterWrite: { parking?.reach("replay-record-written") }) {
            case .success:
                break
            case .failure(.full(let limit)):
                return .failed("\(path) has reached \(limit) bytes, the most a store may hold (lower credential-max-lifetime-s)")
            case .failure(.write(let e, let cutBack)):
                // The partial record was cut off, so the next append is aligned. A full disk leaves the store
                // usable: the next pass tries again, and works once there is room.
                if let t = cutBack {
                    s.broken = "write failed (\(e)) and cutting the partial record off failed too (\(t))"
                }
                return .failed("write \(path): \(e)" + Self.noSpaceNote(path, e))
            case .failure(.sync(let e)):
                // After a failed fsync Linux may have dropped the page: nothing written since can be trusted.
                // Out of space (a file system that allocates at writeback, a quota): the record is cut off and
                // the cut synced; once that sync succeeds the file holds exactly the records before it, all
                // synced earlier, and the store goes on. Any other failure, or a cut that fails, stops it.
                if e.meansNoSpace, case .success = s.log.cut(to: s.log.size) {
                    return .failed("fdatasync \(path): \(e)" + Self.noSpaceNote(path, e) + "; the record was cut off again")
                }
                s.broken = "fdatasync failed (\(e)); reopen the store (reload or restart) once the disk is fixed"
                return .failed("fdatasync \(path): \(e)" + Self.noSpaceNote(path, e))
            }
            s.records += 1
            s.entries[key] = entry
            s.appendsSincePrune += 1
            parking?.reach("replay-record-synced")
            // Entries both clocks agree on are dropped every 256 appends (a pass of the whole dictionary),
            // and the file is rewritten once dropped records outnumber held ones.
            if s.appendsSincePrune >= Self.pruneInterval {
                Self.prune(&s, wall: now, boot: boot)
                if Self.shouldCompact(records: s.records, live: s.entries.count) { _ = Self.compact(path, &s, clock: clock, parking: parking) }
            }
            return .fresh
        }
    }

    /// "; the file system mounted at /var/lib/scangate (ext4 /dev/mmcblk0p2) is full" for ENOSPC and EDQUOT.
    static func noSpaceNote(_ path: String, _ e: Errno) -> String {
        e.meansNoSpace ? "; " + MountPoint.fullDiskNote(path) : ""
    }

    static func adding(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int64.max : sum
    }

    // MARK: - Records

    static func record(_ key: ReplayKey, holdUntil: Int64, bootID: BootID?, bootAt: Int64, bootHold: Int64) -> [UInt8] {
        var out = magic
        out += bigEndian(UInt64(bitPattern: holdUntil))
        out += key.bytes
        out += bootID?.bytes ?? [UInt8](repeating: 0, count: 16)
        out += bigEndian(UInt64(bitPattern: bootAt))
        out += bigEndian(UInt64(bitPattern: bootHold))
        let crc = CRC32.checksum(out)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out
    }

    /// A first-format record (32 bytes: `SGR1`, exp + leeway + 1, the key, a CRC-32), for tests of the
    /// carry-over.
    static func firstFormatRecord(_ key: ReplayKey, _ expiresAt: Int64) -> [UInt8] {
        var out = firstMagic + bigEndian(UInt64(bitPattern: expiresAt)) + key.bytes
        let crc = CRC32.checksum(out)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: value >> UInt64($0)) }
    }

    static func int64(_ b: ArraySlice<UInt8>) -> Int64 {
        var v: UInt64 = 0
        for byte in b { v = v << 8 | UInt64(byte) }
        return Int64(bitPattern: v)
    }

    /// The record at the start of `bytes`, with its size, or nil when it is not a whole, valid record.
    static func parseRecord(_ bytes: ArraySlice<UInt8>) -> (Record, Int)? {
        guard bytes.count >= 4 else { return nil }
        let b = bytes.startIndex
        let head = bytes[b..<(b + 4)]
        if head.elementsEqual(magic) {
            guard bytes.count >= recordSize else { return nil }
            let r = bytes[b..<(b + recordSize)]
            guard CRC32.checksum(r.prefix(60)) == UInt32(truncatingIfNeeded: int64(r.suffix(4))) else { return nil }
            let key = ReplayKey(bytes: Array(r[(b + 12)..<(b + 28)]))
            return (Record(key: key, holdUntil: int64(r[(b + 4)..<(b + 12)]), bootID: BootID(bytes: Array(r[(b + 28)..<(b + 44)])),
                           bootAt: int64(r[(b + 44)..<(b + 52)]), bootHold: int64(r[(b + 52)..<(b + 60)]), firstFormat: false),
                    recordSize)
        }
        if head.elementsEqual(firstMagic) {
            guard bytes.count >= firstRecordSize else { return nil }
            let r = bytes[b..<(b + firstRecordSize)]
            guard CRC32.checksum(r.prefix(28)) == UInt32(truncatingIfNeeded: int64(r.suffix(4))) else { return nil }
            let key = ReplayKey(bytes: Array(r[(b + 12)..<(b + 28)]))
            return (Record(key: key, holdUntil: int64(r[(b + 4)..<(b + 12)]), bootID: nil, bootAt: 0, bootHold: 0, firstFormat: true),
                    firstRecordSize)
        }
        return nil
    }

    /// The store's records for `RecordScanner`: `SGO2` (64 bytes) or the first format's `SGR1` (32 bytes),
    /// each with its CRC-32.
    struct Framing: RecordFraming {
        func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame {
            let left = bytes.count - offset
            guard left >= 4 else { return .incomplete }
            let head = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 4)])
            let size: Int
            if head.elementsEqual(magic) { size = recordSize } else if head.elementsEqual(firstMagic) { size = firstRecordSize } else { return .invalid }
            guard left >= size else { return .incomplete }
            let crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size - 4)]))
            var stored: UInt32 = 0
            for i in (size - 4)..<size { stored = stored << 8 | UInt32(bytes[offset + i]) }
            return crc == stored ? .record(size: size) : .invalid
        }
    }

    /// What a run of bytes holds: its records, how many bytes are whole valid records, and whether the
    /// rest is a torn last record (at most one record's worth) or corruption.
    static func parse(_ bytes: [UInt8], from base: Int) -> (records: [Record], validBytes: Int, corruptAt: Int?) {
        let scan = bytes.withUnsafeBytes { RecordScanner.scan($0, framing: Framing()) }
        let valid = scan.firstProblem ?? bytes.count
        let records = scan.records.prefix { $0.upperBound <= valid }.compactMap { parseRecord(bytes[$0])?.0 }
        let rest = bytes.count - valid
        return (records, valid, rest > recordSize ? base + valid : nil)
    }

    /// The entry a record stands for in this boot. A record of this boot keeps its boot-clock deadline;
    /// one of another boot (or of unknown boot) starts its boot-clock count again now, since nothing
    /// tells how long the machine ran after it was written. A first-format record is held the largest
    /// leeway longer, for a boot-clock count of what its wall time leaves plus a day.
    static func entry(_ r: Record, clock: ReplayClock, bootNow: Int64, wallNow: Int64) -> Entry {
        if r.firstFormat {
            let holdUntil = adding(r.holdUntil, maxLeewaySeconds)
            let (left, overflow) = holdUntil.subtractingReportingOverflow(wallNow)
            let hold = overflow ? Int64.max : adding(max(0, left), firstFormatBootSlack)
            return Entry(holdUntil: holdUntil, bootDeadline: adding(bootNow, hold))
        }
        if let id = r.bootID, let current = clock.bootID, id == current {
            return Entry(holdUntil: r.holdUntil, bootDeadline: adding(r.bootAt, max(0, r.bootHold)))
        }
        return Entry(holdUntil: r.holdUntil, bootDeadline: adding(bootNow, max(0, r.bootHold)))
    }

    // MARK: - Files

    static func openLock(_ path: String) throws(ReplayStoreError) -> OwnedFileDescriptor {
        switch FileDescriptor.open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) {
        case .success(let fd): return OwnedFileDescriptor(fd)
        case .failure(let e):
            throw ReplayStoreError(path: path, message: "cannot open \(path).lock: \(e)" + directoryHint(path, e))
        }
    }

    static func directoryHint(_ path: String, _ e: Errno) -> String {
        e == .noSuchFile ? " (does the directory exist? systemd's StateDirectory=scangate makes /var/lib/scangate)" : ""
    }

    static func takeLock(_ fd: FileDescriptor) -> Bool {
        let deadline = MonotonicInstant.now().adding(milliseconds: lockWaitMilliseconds)
        while true {
            if case .success(true) = fd.lock(.exclusive, nonBlocking: true) { return true }
            guard MonotonicInstant.now() < deadline else { return false }
            sleepThread(milliseconds: 2)
        }
    }

    static func releaseLock(_ fd: FileDescriptor) { _ = fd.unlock() }

    static func openAndLoad(_ path: String, lock: OwnedFileDescriptor, clock: ReplayClock) throws(ReplayStoreError) -> State {
        let log: RecordLog
        do throws(RecordLog.OpenError) {
            log = try RecordLog.open(path, mode: 0o600, create: true, maxBytes: maxFileBytes)
        } catch {
            switch error {
            case .symbolicLink: throw ReplayStoreError(path: path, message: "cannot open: \(Errno(rawValue: ELOOP))")
            case .notRegular: throw ReplayStoreError(path: path, message: "is not a regular file")
            case .tooLarge(let size):
                throw ReplayStoreError(path: path, message: "is \(size) bytes, more than the \(maxFileBytes) a store may reach")
            case .system(let e) where e.operation == "open":
                throw ReplayStoreError(path: path, message: "cannot open: \(e.errno)" + directoryHint(path, e.errno))
            case .system(let e) where e.operation == "open directory" || e.operation == "fsync directory":
                throw ReplayStoreError(path: path, message: "opened, but \(e)")
            case .system(let e): throw ReplayStoreError(path: path, message: "\(e)")
            }
        }
        let mode = log.permissions
        guard mode & 0o022 == 0 else {
            throw ReplayStoreError(path: path, message: "mode 0\(String(mode, radix: 8)) lets group or others write it (anyone could erase consumed passes); chmod 600")
        }
        guard KeyFileReader.ownerAllowed(log.owner) else {
            throw ReplayStoreError(path: path, message: "is owned by uid \(log.owner); it must belong to root or to uid \(geteuid()), the user scangate runs as")
        }
        let bytes: [UInt8]
        switch log.read(from: 0) {
        case .success(let b): bytes = b
        case .failure(let e): throw ReplayStoreError(path: path, message: "cannot read: \(e.errno)")
        }
        let parsed = parse(bytes, from: 0)
        if let at = parsed.corruptAt {
            throw ReplayStoreError(path: path, message: "record at byte \(at) is damaged and more records follow it; the file is not one this program wrote whole. Refusing one-time passes; move the file aside to start an empty store (passes it recorded could then be used again until they expire)")
        }
        if parsed.validBytes < bytes.count {
            // A torn last record: its read was never accepted (a consume returns only after fdatasync).
            if case .failure(let e) = log.cut(to: parsed.validBytes) {
                throw ReplayStoreError(path: path, message: "cannot cut off a torn last record: \(e)")
            }
        } else {
            log.accept(upTo: parsed.validBytes)
        }
        var entries: [ReplayKey: Entry] = [:]
        merge(parsed.records, into: &entries, clock: clock)
        return State(log: log, lock: lock, records: parsed.records.count, entries: entries, broken: nil)
    }

    static func merge(_ records: [Record], into entries: inout [ReplayKey: Entry], clock: ReplayClock) {
        guard !records.isEmpty else { return }
        let bootNow = clock.boot(), wallNow = clock.wall()
        for r in records {
            let e = entry(r, clock: clock, bootNow: bootNow, wallNow: wallNow)
            entries[r.key] = entries[r.key].map { $0.merged(e) } ?? e
        }
    }

    /// Brings `s` up to date with what other processes did since this one last held the lock: records
    /// appended (read and merged), or the file replaced by a compaction (reopened and reloaded).
    /// Returns a problem that leaves the store unusable.
    private func catchUp(_ s: inout State) -> String? {
        var onDisk = stat()
        guard stat(path, &onDisk) == 0 else { return "stat \(path): \(Errno.current)" }
        let size: Int
        switch s.log.currentSize() {
        case .success(let n): size = n
        case .failure(let e): return "\(e)"
        }
        if UInt64(onDisk.st_dev) != s.log.device || UInt64(onDisk.st_ino) != s.log.inode || size < s.log.size {
            do throws(ReplayStoreError) {
                s = try Self.openAndLoad(path, lock: s.lock, clock: clock)
                return nil
            } catch {
                return error.message
            }
        }
        guard size > s.log.size else { return nil }
        let bytes: [UInt8]
        switch s.log.read(from: s.log.size) {
        case .success(let b): bytes = b
        case .failure(let e): return "read \(path): \(e.errno)"
        }
        let parsed = Self.parse(bytes, from: s.log.size)
        if let at = parsed.corruptAt { return "record at byte \(at) is damaged and more records follow it" }
        let end = s.log.size + parsed.validBytes
        if parsed.validBytes < bytes.count {
            // Another process died mid-append (we hold the lock, so nobody is writing).
            if case .failure(let e) = s.log.cut(to: end) {
                return "cannot cut off a torn last record: \(e)"
            }
        } else {
            s.log.accept(upTo: end)
        }
        Self.merge(parsed.records, into: &s.entries, clock: clock)
        s.records += parsed.records.count
        return nil
    }

    /// Drops the entries both clocks agree have expired; a wall clock alone drops nothing.
    static func prune(_ s: inout State, wall: Int64, boot: Int64) {
        s.entries = s.entries.filter { !$0.value.expired(wall: wall, boot: boot) }
        s.appendsSincePrune = 0
    }

    static func shouldCompact(records: Int, live: Int) -> Bool {
        let dead = records - live
        return dead >= 256 && dead >= live
    }

    /// Rewrites the file with the live entries (`RecordLog.replace`: PATH.tmp, fsync, rename over the store,
    /// fsync of the directory, the new file reopened). On failure before the rename the old file stays as it
    /// was; returns the problem. A failed fsync of the directory leaves the store broken: after a power cut
    /// its name may still lead to the old file, which lacks every pass recorded after the rename.
    /// (`faults` makes the directory's fsync fail in tests.)
    @discardableResult
    static func compact(_ path: String, _ s: inout State, clock: ReplayClock, parking: FaultParking? = nil,
                        faults: AtomicFile.Faults = .none) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.entries.count * recordSize)
        // Each entry is written in this boot's terms: the boot clock now, and what is left of its count.
        let bootNow = clock.boot()
        for (key, entry) in s.entries {
            let (left, overflow) = entry.bootDeadline.subtractingReportingOverflow(bootNow)
            bytes += record(key, holdUntil: entry.holdUntil, bootID: clock.bootID, bootAt: bootNow,
                            bootHold: overflow ? Int64.max : max(0, left))
        }
        do throws(AtomicFile.Failure) {
            try s.log.replace(with: bytes, faults: faults,
                              afterWrite: { parking?.reach("replay-compaction-written") },
                              afterRename: { parking?.reach("replay-compaction-renamed") })
        } catch {
            guard error.replaced else { return "compaction: \(error)" }
            s.records = s.entries.count
            // From the rename on the compacted file is the store; a failure now leaves the store unusable.
            s.broken = "compaction: \(error) after renaming \(path).tmp over \(path); reopen the store (reload or restart) once the disk is fixed"
            return s.broken
        }
        s.records = s.entries.count
        return nil
    }
}

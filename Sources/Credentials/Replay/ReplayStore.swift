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
        var data: OwnedFileDescriptor
        var lock: OwnedFileDescriptor
        var device: UInt64
        var inode: UInt64
        /// Bytes of the file already read into `entries`.
        var knownSize: Int
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
            switch faults.write?(path).map({ Result<Void, Errno>.failure($0) }) ?? s.data.fd.writeAll(record) {
            case .success:
                break
            case .failure(let e):
                // Cut off whatever part of the record reached the file, so the next append is aligned.
                // A full disk leaves the store usable: the next pass tries again, and works once there is room.
                if case .failure(let t) = s.data.fd.truncate(to: s.knownSize) {
                    s.broken = "write failed (\(e)) and cutting the partial record off failed too (\(t))"
                }
                return .failed("write \(path): \(e)" + Self.noSpaceNote(path, e))
            }
            parking?.reach("replay-record-written")
            if case .failure(let e) = faults.sync?(path).map({ Result<Void, Errno>.failure($0) }) ?? s.data.fd.dataSync() {
                // After a failed fsync Linux may have dropped the page: nothing written since can be trusted.
                // Out of space (a file system that allocates at writeback, a quota): the record is cut off and
                // the cut synced; once that sync succeeds the file holds exactly the records before it, all
                // synced earlier, and the store goes on. Any other failure, or a cut that fails, stops it.
                if e.meansNoSpace, case .success = s.data.fd.truncate(to: s.knownSize).flatMap({ s.data.fd.dataSync() }) {
                    return .failed("fdatasync \(path): \(e)" + Self.noSpaceNote(path, e) + "; the record was cut off again")
                }
                s.broken = "fdatasync failed (\(e)); reopen the store (reload or restart) once the disk is fixed"
                return .failed("fdatasync \(path): \(e)" + Self.noSpaceNote(path, e))
            }
            s.knownSize += Self.recordSize
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

    /// What a run of bytes holds: its records, how many bytes are whole valid records, and whether the
    /// rest is a torn last record (at most one record's worth) or corruption.
    static func parse(_ bytes: [UInt8], from base: Int) -> (records: [Record], validBytes: Int, corruptAt: Int?) {
        var records: [Record] = []
        var offset = 0
        while offset < bytes.count {
            guard let (record, size) = parseRecord(bytes[offset...]) else { break }
            records.append(record)
            offset += size
        }
        let rest = bytes.count - offset
        return (records, offset, rest > recordSize ? base + offset : nil)
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
            if flock(fd.rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
            let e = Errno.current
            guard e == .wouldBlock || e == .interrupted, MonotonicInstant.now() < deadline else { return false }
            sleepThread(milliseconds: 2)
        }
    }

    static func releaseLock(_ fd: FileDescriptor) { _ = flock(fd.rawValue, LOCK_UN) }

    static func openAndLoad(_ path: String, lock: OwnedFileDescriptor, clock: ReplayClock) throws(ReplayStoreError) -> State {
        var created = false
        var opened = FileDescriptor.open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
        if case .failure(let e) = opened, e.rawValue == EEXIST {
            opened = FileDescriptor.open(path, O_RDWR | O_APPEND | O_NOFOLLOW)
        } else if case .success = opened {
            created = true
        }
        let fd: FileDescriptor
        switch opened {
        case .success(let f): fd = f
        case .failure(let e): throw ReplayStoreError(path: path, message: "cannot open: \(e)" + directoryHint(path, e))
        }
        let data = OwnedFileDescriptor(fd)
        if created, let problem = syncDirectory(of: path) {
            throw ReplayStoreError(path: path, message: "created, but \(problem)")
        }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { throw ReplayStoreError(path: path, message: "cannot stat: \(Errno.current)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ReplayStoreError(path: path, message: "is not a regular file") }
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw ReplayStoreError(path: path, message: "mode 0\(String(mode, radix: 8)) lets group or others write it (anyone could erase consumed passes); chmod 600")
        }
        guard KeyFileReader.ownerAllowed(info.st_uid) else {
            throw ReplayStoreError(path: path, message: "is owned by uid \(info.st_uid); it must belong to root or to uid \(geteuid()), the user scangate runs as")
        }
        guard info.st_size <= maxFileBytes else {
            throw ReplayStoreError(path: path, message: "is \(info.st_size) bytes, more than the \(maxFileBytes) a store may reach")
        }
        let bytes: [UInt8]
        switch readAll(fd, from: 0, count: Int(info.st_size)) {
        case .success(let b): bytes = b
        case .failure(let e): throw ReplayStoreError(path: path, message: "cannot read: \(e)")
        }
        let parsed = parse(bytes, from: 0)
        if let at = parsed.corruptAt {
            throw ReplayStoreError(path: path, message: "record at byte \(at) is damaged and more records follow it; the file is not one this program wrote whole. Refusing one-time passes; move the file aside to start an empty store (passes it recorded could then be used again until they expire)")
        }
        if parsed.validBytes < bytes.count {
            // A torn last record: its read was never accepted (a consume returns only after fdatasync).
            let cut = fd.truncate(to: parsed.validBytes).flatMap { fd.dataSync() }
            if case .failure(let e) = cut {
                throw ReplayStoreError(path: path, message: "cannot cut off a torn last record: \(e)")
            }
        }
        var entries: [ReplayKey: Entry] = [:]
        merge(parsed.records, into: &entries, clock: clock)
        return State(data: data, lock: lock, device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                     knownSize: parsed.validBytes, records: parsed.records.count, entries: entries, broken: nil)
    }

    static func merge(_ records: [Record], into entries: inout [ReplayKey: Entry], clock: ReplayClock) {
        guard !records.isEmpty else { return }
        let bootNow = clock.boot(), wallNow = clock.wall()
        for r in records {
            let e = entry(r, clock: clock, bootNow: bootNow, wallNow: wallNow)
            entries[r.key] = entries[r.key].map { $0.merged(e) } ?? e
        }
    }

    static func readAll(_ fd: FileDescriptor, from start: Int, count: Int) -> Result<[UInt8], Errno> {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { raw in
                retryOnInterrupt { pread(fd.rawValue, raw.baseAddress! + done, count - done, off_t(start + done)) }
            }
            switch n {
            case .success(0): out.removeSubrange(done...); return .success(out)
            case .success(let k): done += k
            case .failure(let e): return .failure(e)
            }
        }
        return .success(out)
    }

    /// Brings `s` up to date with what other processes did since this one last held the lock: records
    /// appended (read and merged), or the file replaced by a compaction (reopened and reloaded).
    /// Returns a problem that leaves the store unusable.
    private func catchUp(_ s: inout State) -> String? {
        var onDisk = stat()
        guard stat(path, &onDisk) == 0 else { return "stat \(path): \(Errno.current)" }
        var ours = stat()
        guard fstat(s.data.fd.rawValue, &ours) == 0 else { return "fstat \(path): \(Errno.current)" }
        if UInt64(onDisk.st_dev) != s.device || UInt64(onDisk.st_ino) != s.inode || Int(ours.st_size) < s.knownSize {
            do throws(ReplayStoreError) {
                s = try Self.openAndLoad(path, lock: s.lock, clock: clock)
                return nil
            } catch {
                return error.message
            }
        }
        let size = Int(ours.st_size)
        guard size > s.knownSize else { return nil }
        let bytes: [UInt8]
        switch Self.readAll(s.data.fd, from: s.knownSize, count: size - s.knownSize) {
        case .success(let b): bytes = b
        case .failure(let e): return "read \(path): \(e)"
        }
        let parsed = Self.parse(bytes, from: s.knownSize)
        if let at = parsed.corruptAt { return "record at byte \(at) is damaged and more records follow it" }
        if parsed.validBytes < bytes.count {
            // Another process died mid-append (we hold the lock, so nobody is writing).
            if case .failure(let e) = s.data.fd.truncate(to: s.knownSize + parsed.validBytes) {
                return "cannot cut off a torn last record: \(e)"
            }
        }
        Self.merge(parsed.records, into: &s.entries, clock: clock)
        s.knownSize += parsed.validBytes
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

    /// Rewrites the file with the live entries: a temp file, fsync, rename over the store, fsync of the
    /// directory, then the new file reopened. On failure the old file stays as it was; returns the problem.
    /// A failed fsync of the directory leaves the store broken: after a power cut its name may still lead
    /// to the old file, which lacks every pass recorded after the rename.
    /// (`syncDirectory` is the fsync of the directory; tests make it fail.)
    @discardableResult
    static func compact(_ path: String, _ s: inout State, clock: ReplayClock, parking: FaultParking? = nil,
                        syncDirectory: (String) -> String? = { syncDirectory(of: $0) }) -> String? {
        let temporary = path + ".tmp"
        let opened = FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        guard case .success(let fd) = opened else {
            if case .failure(let e) = opened { return "compaction: open \(temporary): \(e)" }
            return "compaction: open \(temporary)"
        }
        let file = OwnedFileDescriptor(fd)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.entries.count * recordSize)
        // Each entry is written in this boot's terms: the boot clock now, and what is left of its count.
        let bootNow = clock.boot()
        for (key, entry) in s.entries {
            let (left, overflow) = entry.bootDeadline.subtractingReportingOverflow(bootNow)
            bytes += record(key, holdUntil: entry.holdUntil, bootID: clock.bootID, bootAt: bootNow,
                            bootHold: overflow ? Int64.max : max(0, left))
        }
        if case .failure(let e) = fd.writeAll(bytes) {
            file.close()
            unlink(temporary)
            return "compaction: write \(temporary): \(e)"
        }
        if case .failure(let e) = fd.sync() {
            file.close()
            unlink(temporary)
            return "compaction: fsync \(temporary): \(e)"
        }
        file.close()
        parking?.reach("replay-compaction-written")
        guard rename(temporary, path) == 0 else {
            let e = Errno.current
            unlink(temporary)
            return "compaction: rename \(temporary): \(e)"
        }
        parking?.reach("replay-compaction-renamed")
        // From here the compacted file is the store. Reopen it; a failure now leaves the store unusable.
        if let problem = syncDirectory(path) {
            s.broken = "compaction: \(problem) after renaming \(temporary) over \(path); reopen the store (reload or restart) once the disk is fixed"
        }
        switch FileDescriptor.open(path, O_RDWR | O_APPEND | O_NOFOLLOW) {
        case .success(let reopened):
            var info = stat()
            guard fstat(reopened.rawValue, &info) == 0 else {
                s.broken = "reopening after compaction: fstat: \(Errno.current)"
                _ = reopened.close()
                return s.broken
            }
            s.data = OwnedFileDescriptor(reopened)
            s.device = UInt64(info.st_dev)
            s.inode = UInt64(info.st_ino)
            s.knownSize = bytes.count
            s.records = s.entries.count
            return s.broken
        case .failure(let e):
            s.broken = "reopening after compaction: \(e)"
            return s.broken
        }
    }

    /// fsync of the directory holding `path`, so a new or renamed file's name is durable too.
    static func syncDirectory(of path: String) -> String? {
        var directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if directory.isEmpty { directory = path.hasPrefix("/") ? "/" : "." }
        switch FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY) {
        case .success(let fd):
            defer { _ = fd.close() }
            if case .failure(let e) = fd.sync() { return "fsync of \(directory) failed: \(e)" }
            return nil
        case .failure(let e):
            return "open \(directory): \(e)"
        }
    }
}

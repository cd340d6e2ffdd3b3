#if canImport(Glibc)
import Glibc
#endif
import Platform
import Synchronization
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

/// The passes one-time use has consumed, in an append-only file that survives a restart and a power cut.
///
/// The file is a sequence of 32-byte records: `SGR1`, the entry's expiry (exp + leeway, seconds since
/// the epoch, 8 bytes big-endian), the 16-byte ReplayKey, and a CRC-32 of those 28 bytes. A consume
/// appends one record and `fdatasync`s it before it returns `.fresh`, so a read is accepted only once its
/// record is on disk. Each record is synced before the next is written, so only the last can be torn
/// (a kill -9 or power cut mid-write): a last record that is short or fails its CRC belongs to a read that
/// was never accepted, and is cut off at load. A bad record with good ones after it is corruption, and
/// the store refuses to load (fail closed). Entries expire at exp + leeway (the pass is expired by then
/// anyway): at the first consume after a load and every 256 consumes the expired ones are dropped, and when expired records outnumber live ones
/// the file is rewritten with the live ones only (temp file, fsync, rename, fsync of the directory).
///
/// A second process may use the same file (`scangate credential verify --one-time` at a manual gate
/// beside the daemon): each consume holds an flock on PATH.lock, reads what others appended, and
/// reopens the file when another process compacted it. A write that fails leaves the read refused
/// (`.failed`); after a failed fsync the store stops accepting one-time passes until it is reopened,
/// since the kernel may have dropped the record.
public final class ReplayStore: Sendable {
    public let path: String
    private let state: Mutex<State>

    static let recordSize = 32
    static let magic: [UInt8] = Array("SGR1".utf8)
    /// Larger files are refused at load (two million records).
    static let maxFileBytes = 64 << 20
    /// More live entries than this and one-time passes are refused (the file would pass 32 MB).
    public static let maxLiveEntries = 1_000_000
    /// Appends between two passes over the entries that drop expired ones.
    static let pruneInterval = 256
    /// How long a consume waits for another process's lock before failing closed.
    static let lockWaitMilliseconds = 2000.0

    struct State {
        var data: OwnedFileDescriptor
        var lock: OwnedFileDescriptor
        var device: UInt64
        var inode: UInt64
        /// Bytes of the file already read into `entries` (a multiple of 32).
        var knownSize: Int
        var records: Int
        var entries: [ReplayKey: Int64]
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
    ///
    /// Nothing is dropped for having expired here: the clock may not be synchronised yet at start (a Pi
    /// without a battery clock can boot years ahead or behind), and a clock running ahead must not erase
    /// passes. Expired entries are dropped by `consume`, whose `now` the policy takes only after the clock
    /// check passed.
    public init(path: String) throws(ReplayStoreError) {
        self.path = path
        let lock = try Self.openLock(path)
        guard Self.takeLock(lock.fd) else {
            throw ReplayStoreError(path: path, message: "another process holds \(path).lock for more than \(Int(Self.lockWaitMilliseconds)) ms")
        }
        defer { Self.releaseLock(lock.fd) }
        self.state = Mutex(try Self.openAndLoad(path, lock: lock))
    }

    /// Entries held: consumed passes, including expired ones not yet dropped (every 256 consumes).
    public var entryCount: Int { state.withLock { $0.entries.count } }
    /// Entries that have not expired at `now`.
    public func liveEntries(now: Int64) -> Int { state.withLock { s in s.entries.values.filter { $0 > now }.count } }
    /// Records in the file, expired ones included.
    public var fileRecords: Int { state.withLock { $0.records } }

    /// True when the pass was already consumed and has not expired. Does not record anything.
    public func contains(_ key: ReplayKey, now: Int64) -> Bool {
        state.withLock { s in (s.entries[key] ?? Int64.min) > now }
    }

    /// Consumes `key` until `expiresAt` (exp + leeway): `.fresh` once it is durably recorded.
    public func consume(_ key: ReplayKey, expiresAt: Int64, now: Int64) -> Consumed {
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
            if let expiry = s.entries[key], expiry > now { return .replayed }
            if s.entries.count >= Self.maxLiveEntries {
                Self.prune(&s, now: now)
                guard s.entries.count < Self.maxLiveEntries else {
                    return .failed("\(Self.maxLiveEntries) passes are live in the store, its limit (lower credential-max-lifetime-s)")
                }
            }
            let record = Self.record(key, expiresAt)
            switch s.data.fd.writeAll(record) {
            case .success:
                break
            case .failure(let e):
                // Cut off whatever part of the record reached the file, so the next append is aligned.
                if ftruncate(s.data.fd.rawValue, off_t(s.knownSize)) != 0 {
                    s.broken = "write failed (\(e)) and cutting the partial record off failed too (\(Errno.current))"
                }
                return .failed("write \(path): \(e)")
            }
            guard fdatasync(s.data.fd.rawValue) == 0 else {
                // After a failed fsync Linux may have dropped the page: nothing written since can be trusted.
                let e = Errno.current
                s.broken = "fdatasync failed (\(e)); reopen the store (reload or restart) once the disk is fixed"
                return .failed("fdatasync \(path): \(e)")
            }
            s.knownSize += Self.recordSize
            s.records += 1
            s.entries[key] = expiresAt
            s.appendsSincePrune += 1
            // Expired entries are dropped every 256 appends (a pass of the whole dictionary), and the file
            // is rewritten once expired records outnumber live ones.
            if s.appendsSincePrune >= Self.pruneInterval {
                Self.prune(&s, now: now)
                if Self.shouldCompact(records: s.records, live: s.entries.count) { _ = Self.compact(path, &s) }
            }
            return .fresh
        }
    }

    // MARK: - Records

    static func record(_ key: ReplayKey, _ expiresAt: Int64) -> [UInt8] {
        var out = magic
        let e = UInt64(bitPattern: expiresAt)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: e >> UInt64(shift))) }
        out += key.bytes
        let crc = CRC32.checksum(out)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out
    }

    /// The entry in a 32-byte record, or nil when it is not a whole, valid record.
    static func parseRecord(_ bytes: ArraySlice<UInt8>) -> (ReplayKey, Int64)? {
        guard bytes.count == recordSize else { return nil }
        let b = Array(bytes)
        guard b[0..<4].elementsEqual(magic) else { return nil }
        var crc: UInt32 = 0
        for i in 28..<32 { crc = crc << 8 | UInt32(b[i]) }
        guard CRC32.checksum(b[0..<28]) == crc else { return nil }
        var e: UInt64 = 0
        for i in 4..<12 { e = e << 8 | UInt64(b[i]) }
        return (ReplayKey(bytes: Array(b[12..<28])), Int64(bitPattern: e))
    }

    /// What a run of bytes holds: its entries, how many bytes are whole valid records, and whether the
    /// rest is a torn last record (at most one record's worth) or corruption.
    static func parse(_ bytes: [UInt8], from base: Int) -> (entries: [(ReplayKey, Int64)], validBytes: Int, corruptAt: Int?) {
        var entries: [(ReplayKey, Int64)] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + recordSize, bytes.count)
            guard let entry = parseRecord(bytes[offset..<end]) else { break }
            entries.append(entry)
            offset = end
        }
        let rest = bytes.count - offset
        return (entries, offset, rest > recordSize ? base + offset : nil)
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

    static func openAndLoad(_ path: String, lock: OwnedFileDescriptor) throws(ReplayStoreError) -> State {
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
            guard ftruncate(fd.rawValue, off_t(parsed.validBytes)) == 0, fdatasync(fd.rawValue) == 0 else {
                throw ReplayStoreError(path: path, message: "cannot cut off a torn last record: \(Errno.current)")
            }
        }
        var entries: [ReplayKey: Int64] = [:]
        for (key, expiry) in parsed.entries {
            entries[key] = max(expiry, entries[key] ?? Int64.min)
        }
        return State(data: data, lock: lock, device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                     knownSize: parsed.validBytes, records: parsed.entries.count, entries: entries, broken: nil)
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
                s = try Self.openAndLoad(path, lock: s.lock)
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
            guard ftruncate(s.data.fd.rawValue, off_t(s.knownSize + parsed.validBytes)) == 0 else {
                return "cannot cut off a torn last record: \(Errno.current)"
            }
        }
        for (key, expiry) in parsed.entries {
            s.entries[key] = max(expiry, s.entries[key] ?? Int64.min)
        }
        s.knownSize += parsed.validBytes
        s.records += parsed.entries.count
        return nil
    }

    static func prune(_ s: inout State, now: Int64) {
        s.entries = s.entries.filter { $0.value > now }
        s.appendsSincePrune = 0
    }

    static func shouldCompact(records: Int, live: Int) -> Bool {
        let dead = records - live
        return dead >= 256 && dead >= live
    }

    /// Rewrites the file with the live entries: a temp file, fsync, rename over the store, fsync of the
    /// directory, then the new file reopened. On failure the old file stays as it was; returns the problem.
    @discardableResult
    static func compact(_ path: String, _ s: inout State) -> String? {
        let temporary = path + ".tmp"
        let opened = FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        guard case .success(let fd) = opened else {
            if case .failure(let e) = opened { return "compaction: open \(temporary): \(e)" }
            return "compaction: open \(temporary)"
        }
        let file = OwnedFileDescriptor(fd)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.entries.count * recordSize)
        for (key, expiry) in s.entries { bytes += record(key, expiry) }
        if case .failure(let e) = fd.writeAll(bytes) {
            file.close()
            unlink(temporary)
            return "compaction: write \(temporary): \(e)"
        }
        guard fsync(fd.rawValue) == 0 else {
            let e = Errno.current
            file.close()
            unlink(temporary)
            return "compaction: fsync \(temporary): \(e)"
        }
        file.close()
        guard rename(temporary, path) == 0 else {
            let e = Errno.current
            unlink(temporary)
            return "compaction: rename \(temporary): \(e)"
        }
        // From here the compacted file is the store. Reopen it; a failure now leaves the store unusable.
        _ = syncDirectory(of: path)
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
            return nil
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
            return fsync(fd.rawValue) == 0 ? nil : "fsync of \(directory) failed: \(Errno.current)"
        case .failure(let e):
            return "open \(directory): \(e)"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// How one file format's records are recognised: each format (the spool's segments, the one-time store,
/// the command ids) has its own magic or syntax and its own checksum, and says here what is at an offset.
public protocol RecordFraming {
    /// The record at `offset` of `bytes`: `.record(size:)` when a whole record with a valid checksum starts
    /// there, `.incomplete` when the bytes end before one could be whole, `.invalid` otherwise.
    func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame
}

public enum RecordFrame: Equatable, Sendable {
    case record(size: Int)
    case incomplete
    case invalid
}

/// What a run of bytes holds: the whole valid records, the damaged runs between them, and the tail after
/// the last one when no valid record follows it (a torn last write, or damage that reaches the end).
public struct RecordScan: Equatable, Sendable {
    /// Each valid record's bytes.
    public var records: [Range<Int>] = []
    /// Bytes skipped between valid records: reading resynchronised at each range's end.
    public var damaged: [Range<Int>] = []
    /// Where the unreadable tail starts; nil when the bytes end with a whole record.
    public var tail: Int?
    /// The end of the last valid record (0 when there is none).
    public var validEnd: Int = 0

    public init() {}

    /// The first byte that is not part of a valid record.
    public var firstProblem: Int? {
        switch (damaged.first?.lowerBound, tail) {
        case (let d?, let t?): return min(d, t)
        case (let d?, nil): return d
        case (nil, let t): return t
        }
    }
}

/// Reading a record file: record by record, and past damage to the next valid record.
public enum RecordScanner {
    /// Scans `bytes` from `start`. A record that does not check out is skipped: reading goes on at the next
    /// offset where a whole valid record starts (a resync); with none, the rest is the tail.
    public static func scan(_ bytes: UnsafeRawBufferPointer, framing: some RecordFraming, from start: Int = 0) -> RecordScan {
        var scan = RecordScan()
        var offset = start
        scan.validEnd = start
        while offset < bytes.count {
            if case .record(let size) = framing.frame(bytes, at: offset) {
                scan.records.append(offset..<(offset + size))
                offset += size
                scan.validEnd = offset
                continue
            }
            guard let next = resync(bytes, from: offset + 1, framing: framing) else {
                scan.tail = offset
                break
            }
            scan.damaged.append(offset..<next)
            offset = next
        }
        return scan
    }

    /// The first offset at or after `from` where a whole valid record starts.
    public static func resync(_ bytes: UnsafeRawBufferPointer, from: Int, framing: some RecordFraming) -> Int? {
        var at = max(0, from)
        while at < bytes.count {
            if case .record = framing.frame(bytes, at: at) { return at }
            at += 1
        }
        return nil
    }
}

/// An append-only file of checksummed records, bounded in size: the one implementation under the
/// one-time pass store and the command ids (the spool's segments use its parts: `RecordScanner`,
/// `FileDescriptor`'s positional calls and `Directory.sync`).
///
/// - **Open** (`open`): only a regular file (never through a symbolic link, a FIFO or a device is refused
///   without waiting), at most `maxBytes`; the directory is synced, so a name created by this open (or by
///   a run that died before syncing it) is durable before any record goes in.
/// - **Append**: `pwrite` at the end of the whole records, then `fdatasync`; a failed write is cut back
///   (`ftruncate`), so the next record is aligned. A record that would take the file past `maxBytes` is
///   refused (`.full`).
/// - **Recovery**: `RecordScanner.scan` over `read(from:)`; the owner decides what damage means (skip it,
///   or refuse to load) and `cut(to:)` removes a torn tail (`ftruncate`, `fdatasync`).
/// - **Compaction** (`replace`): `AtomicFile.replace` with the live records, then the new file reopened.
///
/// Not thread-safe: its owner serialises calls (a lock, and an flock when processes share the file).
public final class RecordLog {
    public enum OpenError: Error, Sendable {
        case symbolicLink
        case notRegular
        case tooLarge(Int)
        case system(SystemError)
    }

    public enum AppendError: Error, Sendable {
        /// The record would take the file past `maxBytes`; nothing was written.
        case full(limit: Int)
        /// The write failed; the partial record was cut back unless `cutBack` says why not.
        case write(Errno, cutBack: Errno?)
        /// The data sync failed: the record may or may not be on disk, and the kernel may have dropped
        /// pages written since the last sync. `size` still ends before it.
        case sync(Errno)
    }

    public let path: String
    public let mode: mode_t
    public let maxBytes: Int
    public private(set) var file: OwnedFileDescriptor
    /// Bytes of whole records known: where the next record goes.
    public private(set) var size: Int
    /// The file's size when it was opened.
    public private(set) var sizeAtOpen: Int
    public private(set) var device: UInt64
    public private(set) var inode: UInt64
    /// The file's owner and permission bits when it was opened.
    public private(set) var owner: uid_t
    public private(set) var permissions: mode_t

    public var fd: FileDescriptor { file.fd }

    private init(path: String, mode: mode_t, maxBytes: Int, file: OwnedFileDescriptor, info: stat) {
        self.path = path
        self.mode = mode
        self.maxBytes = maxBytes
        self.file = file
        self.size = Int(info.st_size)
        self.sizeAtOpen = Int(info.st_size)
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
        self.owner = info.st_uid
        self.permissions = info.st_mode & 0o7777
    }

    /// Opens `path` (created with `mode` when `create` and missing). `size` is the whole file until the owner
    /// has scanned it and called `cut(to:)` or `accept(upTo:)`.
    public static func open(_ path: String, mode: mode_t, create: Bool, maxBytes: Int) throws(OpenError) -> RecordLog {
        let (file, info) = try openFile(path, mode: mode, create: create, maxBytes: maxBytes)
        do throws(SystemError) { try Directory.syncParent(of: path) } catch { throw .system(error) }
        return RecordLog(path: path, mode: mode, maxBytes: maxBytes, file: file, info: info)
    }

    private static func openFile(_ path: String, mode: mode_t, create: Bool, maxBytes: Int) throws(OpenError) -> (OwnedFileDescriptor, stat) {
        // O_NONBLOCK: a FIFO put in the file's place is refused below, not waited on.
        let flags = O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | (create ? O_CREAT : 0)
        let fd: FileDescriptor
        switch FileDescriptor.open(path, flags, mode: mode) {
        case .success(let d): fd = d
        case .failure(let e) where e.rawValue == ELOOP: throw .symbolicLink
        case .failure(let e) where e.rawValue == ENXIO: throw .notRegular
        case .failure(let e): throw .system(SystemError("open", path, e))
        }
        let file = OwnedFileDescriptor(fd)
        let info: stat
        switch fd.status() {
        case .success(let i): info = i
        case .failure(let e): throw .system(SystemError("fstat", path, e))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        guard Int(info.st_size) <= maxBytes else { throw .tooLarge(Int(info.st_size)) }
        let current = fcntl(fd.rawValue, F_GETFL)
        guard current >= 0, fcntl(fd.rawValue, F_SETFL, current & ~O_NONBLOCK) == 0 else {
            throw .system(SystemError("fcntl", path, .current))
        }
        return (file, info)
    }

    /// The bytes from `offset` to the end of the file as it is now (at most `maxBytes` in all).
    public func read(from offset: Int) -> Result<[UInt8], SystemError> {
        let end: Int
        switch fd.status() {
        case .success(let info): end = min(Int(info.st_size), maxBytes)
        case .failure(let e): return .failure(SystemError("fstat", path, e))
        }
        guard end > offset else { return .success([]) }
        return fd.readAll(fromAbsoluteOffset: offset, count: end - offset).mapError { SystemError("read", path, $0) }
    }

    /// The file's size now (records other processes appended included).
    public func currentSize() -> Result<Int, SystemError> {
        fd.status().map { Int($0.st_size) }.mapError { SystemError("fstat", path, $0) }
    }

    /// Takes the bytes up to `length` as whole records (after a scan found them valid); nothing is written.
    public func accept(upTo length: Int) { size = length }

    /// Cuts the file to `length` (a torn tail, a record whose sync failed) and syncs the cut.
    public func cut(to length: Int) -> Result<Void, Errno> {
        fd.truncate(to: length).flatMap { fd.dataSync() }.map { size = length }
    }

    /// Appends `bytes` (whole records) and syncs them: on disk when this returns success.
    /// `afterWrite` marks the step between the write and the sync for crash tests (FaultParking).
    public func append(_ bytes: [UInt8], faults: WriteFaults = .none, afterWrite: () -> Void = {}) -> Result<Void, AppendError> {
        guard size + bytes.count <= maxBytes else { return .failure(.full(limit: maxBytes)) }
        let written = faults.write?(path).map { Result<Void, Errno>.failure($0) } ?? fd.writeAll(toAbsoluteOffset: size, bytes)
        if case .failure(let e) = written {
            // Cut off whatever part of the record reached the file, so the next append is aligned.
            if case .failure(let t) = fd.truncate(to: size) { return .failure(.write(e, cutBack: t)) }
            return .failure(.write(e, cutBack: nil))
        }
        afterWrite()
        if case .failure(let e) = faults.sync?(path).map({ Result<Void, Errno>.failure($0) }) ?? fd.dataSync() {
            return .failure(.sync(e))
        }
        size += bytes.count
        return .success(())
    }

    /// Replaces the file with `contents` (the live records) through `AtomicFile.replace`, then reopens it.
    /// On a failure before the rename the old file stays as it was and open; after it (`replaced`), the new
    /// file is reopened when it can be and the failure is still thrown.
    public func replace(with contents: [UInt8], temporary: String? = nil, faults: AtomicFile.Faults = .none,
                        afterWrite: () -> Void = {}, afterRename: () -> Void = {}) throws(AtomicFile.Failure) {
        var failure: AtomicFile.Failure?
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(path, with: contents, mode: mode, temporary: temporary, faults: faults,
                                   afterWrite: afterWrite, afterRename: afterRename)
        } catch {
            guard error.replaced else { throw error }
            failure = error
        }
        do throws(OpenError) {
            let (reopened, info) = try Self.openFile(path, mode: mode, create: false, maxBytes: max(maxBytes, contents.count))
            file = reopened
            size = contents.count
            sizeAtOpen = Int(info.st_size)
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            owner = info.st_uid
            permissions = info.st_mode & 0o7777
        } catch {
            let e: SystemError
            if case .system(let s) = error { e = s } else { e = SystemError("reopen", path, .invalidArgument) }
            throw failure ?? AtomicFile.Failure(error: SystemError("reopen (\(e))", path, e.errno), replaced: true)
        }
        if let failure { throw failure }
    }
}

import Core
import Platform
import Settings
#if canImport(Glibc)
import Glibc
#endif

/// Remembers the ids of commands acted on until they expire, so a repeated id is not acted on twice.
/// Bounded: when `capacity` live ids are held, new commands are refused (never forgotten early, which
/// would let a replay through).
///
/// An id is held until both its wall-clock expiry (the command's `expires` plus `slackSeconds`) and
/// its boot-clock deadline (CLOCK_BOOTTIME at arrival plus the command's remaining lifetime plus the
/// slack, in the same boot) have passed: a backward wall-clock step cannot let it in again while its
/// expiry is still ahead, and a forward step cannot shorten it within the boot.
public struct CommandReplayGuard: Sendable {
    public struct Entry: Equatable, Sendable {
        /// Unix seconds until which the id is held by the wall clock.
        public var wallExpiry: Int64
        /// CLOCK_BOOTTIME nanoseconds until which it is held in `bootID`'s boot (0: not at all).
        public var bootDeadline: UInt64
        public var bootID: BootID?

        public init(wallExpiry: Int64, bootDeadline: UInt64, bootID: BootID?) {
            self.wallExpiry = wallExpiry
            self.bootDeadline = bootDeadline
            self.bootID = bootID
        }

        /// Still held at wall time `now` (seconds) and boot time `boot` in boot `currentBoot`.
        public func isLive(now: Int64, boot: UInt64, currentBoot: BootID?) -> Bool {
            if now < wallExpiry { return true }
            if let id = bootID, id == currentBoot, boot < bootDeadline { return true }
            return false
        }
    }

    public let capacity: Int
    public let slackSeconds: Int64
    public private(set) var entries: [String: Entry] = [:]

    public init(capacity: Int = 4096, slackSeconds: Int64 = 60) {
        self.capacity = capacity
        self.slackSeconds = slackSeconds
    }

    public enum Admission: Equatable, Sendable { case new, repeated, full }

    public var count: Int { entries.count }

    /// What `admit` records for a command expiring at `expires` (Unix seconds) that arrived at wall time
    /// `now` (seconds) and boot time `boot` (ns).
    public func entry(expires: Int64, now: Int64, boot: UInt64, bootID: BootID?) -> Entry {
        let lifetime = UInt64(max(0, expires - now) + slackSeconds)
        return Entry(wallExpiry: expires + slackSeconds, bootDeadline: boot + lifetime * 1_000_000_000, bootID: bootID)
    }

    /// Records `id` unless it is held.
    public mutating func admit(_ id: String, expires: Int64, now: Int64, boot: UInt64, bootID: BootID?) -> Admission {
        if let e = entries[id], e.isLive(now: now, boot: boot, currentBoot: bootID) { return .repeated }
        if entries.count >= capacity { prune(now: now, boot: boot, bootID: bootID) }
        guard entries.count < capacity || entries[id] != nil else { return .full }
        entries[id] = entry(expires: expires, now: now, boot: boot, bootID: bootID)
        return .new
    }

    /// Forgets ids no longer held.
    public mutating func prune(now: Int64, boot: UInt64, bootID: BootID?) {
        entries = entries.filter { $0.value.isLive(now: now, boot: boot, currentBoot: bootID) }
    }

    /// Takes back an admission that could not be recorded on disk.
    mutating func forget(_ id: String) { entries.removeValue(forKey: id) }

    /// Puts back an id read from disk.
    mutating func restore(_ id: String, _ entry: Entry) {
        if let old = entries[id], old.wallExpiry >= entry.wallExpiry, old.bootDeadline >= entry.bootDeadline { return }
        entries[id] = entry
    }
}

/// The ids of commands acted on, on disk beside the spool (`<mqtt-spool>/commands`, under the spool's
/// lock), so a restart of the daemon or a rebuild of the output still refuses a repeated id.
///
/// One line per id, appended and fdatasynced before the command is acted on (a command whose id cannot
/// be recorded is refused, not acted on):
///     <id> <wall expiry, Unix s> <boot id, 32 hex digits, or -> <boot deadline, ns> <CRC-32 of the text before, 8 hex digits>
/// A line that does not check out (a torn write) is skipped. At open the file is read (a regular file,
/// opened with O_NOFOLLOW, at most `maxFileBytes`), ids no longer held are dropped, and whenever it holds
/// lines that are not live ids it is compacted: the live ids written to `commands.tmp`, synced, renamed
/// over it, and the directory synced. It is compacted again once it has twice `capacity` lines.
final class CommandIDStore: Sendable {
    static let fileName = "commands"
    static let maxFileBytes = 4 << 20

    let path: String
    let directory: String
    private let clock: SpoolClock
    private let logger: Logger
    private let state: PosixMutex<State>

    struct State {
        var replay: CommandReplayGuard
        var fd: Int32
        var lines: Int
        /// A write failed part-way: the file is rewritten before the next line.
        var needsRewrite = false
        var closed = false
    }

    /// What opening found.
    let loaded: (ids: Int, skipped: Int)

    init(directory: String, clock: SpoolClock, logger: Logger, capacity: Int = 4096) throws(SpoolError) {
        self.directory = directory
        self.path = directory + "/" + CommandIDStore.fileName
        self.clock = clock
        self.logger = logger
        let fd = try CommandIDStore.openFile(path, create: true)
        let content: [UInt8]
        do throws(SpoolError) {
            // The file may have just been created (here, or by a run that died before this fsync): its name
            // is durable only once the directory is synced, as for the spool's segments.
            if let e = EventSpool.syncDirectory(directory) { throw SpoolError(e) }
            content = try CommandIDStore.readAll(fd, path: path)
        } catch {
            EventSpool.closeFile(fd, path, logger)
            throw error
        }
        var replay = CommandReplayGuard(capacity: capacity)
        var lines = 0, skipped = 0
        for line in content.split(separator: 0x0A, omittingEmptySubsequences: true) {
            lines += 1
            guard let (id, entry) = CommandIDStore.parse(Array(line)) else { skipped += 1; continue }
            replay.restore(id, entry)
        }
        let tornTail = !content.isEmpty && content.last != 0x0A
        let now = clock.wall() / 1_000_000_000
        replay.prune(now: now, boot: clock.boot(), bootID: clock.bootID)
        loaded = (replay.count, skipped)
        state = PosixMutex(State(replay: replay, fd: fd, lines: lines, needsRewrite: skipped > 0 || tornTail || lines > replay.count))
        if skipped > 0 {
            logger.warning("mqtt spool \(path): \(skipped) lines that are not valid command ids were skipped (a torn write, or damage)")
        }
        // Compact now: drops expired ids and garbage, so appends go on after a clean last line.
        try state.withLock { s throws(SpoolError) in
            if s.needsRewrite { try rewriteLocked(&s) }
        }
    }

    deinit { close() }

    func close() {
        let fd: Int32? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.fd
        }
        if let fd { EventSpool.closeFile(fd, path, logger) }
    }

    var count: Int { state.withLock { $0.replay.count } }
    var capacity: Int { state.withLock { $0.replay.capacity } }

    /// Records `id` (expiring at `expires`, Unix seconds) unless it is held; a new id is on disk
    /// (fdatasync) before this returns `.new`.
    func admit(_ id: String, expires: Int64) -> Result<CommandReplayGuard.Admission, SpoolError> {
        let now = clock.wall() / 1_000_000_000
        let boot = clock.boot()
        let bootID = clock.bootID
        return state.withLock { s -> Result<CommandReplayGuard.Admission, SpoolError> in
            guard !s.closed else { return .failure(SpoolError("\(path): closed")) }
            let admission = s.replay.admit(id, expires: expires, now: now, boot: boot, bootID: bootID)
            guard admission == .new, let entry = s.replay.entries[id] else { return .success(admission) }
            do throws(SpoolError) {
                if s.needsRewrite || s.lines >= 2 * s.replay.capacity {
                    s.replay.prune(now: now, boot: boot, bootID: bootID)
                    // The rewrite puts the new id in with the others.
                    try rewriteLocked(&s)
                } else {
                    try appendLocked(&s, CommandIDStore.line(id, entry))
                }
            } catch {
                s.replay.forget(id)
                return .failure(error)
            }
            return .success(.new)
        }
    }

    // MARK: - The file

    static func line(_ id: String, _ e: CommandReplayGuard.Entry) -> [UInt8] {
        let text = "\(id) \(e.wallExpiry) \(e.bootID?.description ?? "-") \(e.bootDeadline)"
        let crc = CRC32.checksum(Array(text.utf8))
        return Array((text + " " + String(decoding: Hex.digits(UInt64(crc), count: 8), as: UTF8.self) + "\n").utf8)
    }

    static func parse(_ line: [UInt8]) -> (String, CommandReplayGuard.Entry)? {
        let fields = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard fields.count == 5, fields[4].count == 8, let crc = UInt32(String(decoding: fields[4], as: UTF8.self), radix: 16) else { return nil }
        let text = Array(line[..<(line.count - 9)])
        guard CRC32.checksum(text) == crc else { return nil }
        let idBytes = fields[0]
        guard (1...MQTTCommandParser.maxIDLength).contains(idBytes.count),
              idBytes.allSatisfy({ MQTTSettings.isIDByte($0) || $0 == UInt8(ascii: ":") }) else { return nil }
        guard let wall = Int64(String(decoding: fields[1], as: UTF8.self)),
              let deadline = UInt64(String(decoding: fields[3], as: UTF8.self)) else { return nil }
        let bootText = String(decoding: fields[2], as: UTF8.self)
        let bootID: BootID?
        if bootText == "-" { bootID = nil } else {
            guard let id = BootID(text: bootText) else { return nil }
            bootID = id
        }
        return (String(decoding: idBytes, as: UTF8.self), CommandReplayGuard.Entry(wallExpiry: wall, bootDeadline: deadline, bootID: bootID))
    }

    /// Opens `path` for appending: never through a symbolic link, only a regular file of at most `maxFileBytes`.
    static func openFile(_ path: String, create: Bool) throws(SpoolError) -> Int32 {
        let flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | (create ? O_CREAT : 0)
        let fd: Int32
        switch FileDescriptor.open(path, flags, mode: 0o600) {
        case .success(let d): fd = d.rawValue
        case .failure(let e) where e.rawValue == ELOOP:
            throw SpoolError("mqtt-spool \(path): a symbolic link, not the spool's own file; remove it (the spool makes its own)")
        case .failure(let e): throw SpoolError(SystemError("open", path, e))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let e = Errno.current
            _ = FileDescriptor(rawValue: fd).close()
            throw SpoolError(SystemError("fstat", path, e))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            _ = FileDescriptor(rawValue: fd).close()
            throw SpoolError("mqtt-spool \(path): not a regular file; remove it (the spool makes its own)")
        }
        guard Int(info.st_size) <= maxFileBytes else {
            _ = FileDescriptor(rawValue: fd).close()
            throw SpoolError("mqtt-spool \(path): \(info.st_size) bytes, more than the \(maxFileBytes) a command id file can hold; "
                             + "not one of ours: remove it")
        }
        let current = fcntl(fd, F_GETFL)
        guard current >= 0, fcntl(fd, F_SETFL, current & ~O_NONBLOCK) == 0 else {
            let e = Errno.current
            _ = FileDescriptor(rawValue: fd).close()
            throw SpoolError(SystemError("fcntl", path, e))
        }
        return fd
    }

    static func readAll(_ fd: Int32, path: String) throws(SpoolError) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var offset = 0
        while true {
            let r = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { pread(fd, raw.baseAddress, raw.count, off_t(offset)) } }
            switch r {
            case .success(0): return out
            case .success(let n):
                out += buffer[0..<n]
                offset += n
                if out.count > maxFileBytes {
                    throw SpoolError("mqtt-spool \(path): grew past \(maxFileBytes) bytes while it was read; not one of ours: remove it")
                }
            case .failure(let e): throw SpoolError(SystemError("read", path, e))
            }
        }
    }

    private func appendLocked(_ s: inout State, _ bytes: [UInt8]) throws(SpoolError) {
        switch FileDescriptor(rawValue: s.fd).writeAll(bytes) {
        case .success: break
        case .failure(let e):
            s.needsRewrite = true
            throw SpoolError(SystemError("write", path, e))
        }
        if case .failure(let e) = retryOnInterrupt({ fdatasync(s.fd) }) {
            s.needsRewrite = true
            throw SpoolError(SystemError("fdatasync", path, e))
        }
        s.lines += 1
    }

    /// Writes the live ids to `commands.tmp`, syncs it, renames it over the file and syncs the directory.
    private func rewriteLocked(_ s: inout State) throws(SpoolError) {
        let temporary = path + ".tmp"
        var text: [UInt8] = []
        for (id, entry) in s.replay.entries.sorted(by: { $0.key < $1.key }) { text += CommandIDStore.line(id, entry) }
        let fd: FileDescriptor
        switch FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY, mode: 0o600) {
        case .success(let d): fd = d
        case .failure(let e): throw SpoolError(SystemError("create", temporary, e))
        }
        var failure: SpoolError?
        if case .failure(let e) = fd.writeAll(text) {
            failure = SpoolError(SystemError("write", temporary, e))
        } else if case .failure(let e) = retryOnInterrupt({ fdatasync(fd.rawValue) }) {
            failure = SpoolError(SystemError("fdatasync", temporary, e))
        }
        if case .failure(let e) = fd.close(), failure == nil { failure = SpoolError(SystemError("close", temporary, e)) }
        if let failure {
            EventSpool.removeFile(temporary, logger)
            throw failure
        }
        if rename(temporary, path) != 0 {
            let e = Errno.current
            EventSpool.removeFile(temporary, logger)
            throw SpoolError(SystemError("rename", temporary + " to " + path, e))
        }
        if let e = EventSpool.syncDirectory(directory) { throw SpoolError(e) }
        let reopened = try CommandIDStore.openFile(path, create: false)
        EventSpool.closeFile(s.fd, path, logger)
        s.fd = reopened
        s.lines = s.replay.count
        s.needsRewrite = false
    }
}

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
        var log: RecordLog
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
        // The file may have just been created (here, or by a run that died before its directory was synced):
        // RecordLog.open syncs the directory, so its name is durable before an id is, as for the spool's segments.
        let log = try CommandIDStore.openFile(path)
        let content: [UInt8]
        switch log.read(from: 0) {
        case .success(let bytes): content = bytes
        case .failure(let e): throw SpoolError(e)
        }
        var replay = CommandReplayGuard(capacity: capacity)
        let scan = content.withUnsafeBytes { RecordScanner.scan($0, framing: LineFraming()) }
        for range in scan.records {
            guard let (id, entry) = CommandIDStore.parse(CommandIDStore.text(of: content[range])) else { continue }
            replay.restore(id, entry)
        }
        // Lines that do not check out: in the damaged runs and the tail (empty lines do not count).
        var skipped = 0
        for range in scan.damaged + (scan.tail.map { [$0..<content.count] } ?? []) {
            skipped += content[range].split(separator: 0x0A, omittingEmptySubsequences: true).count
        }
        let lines = scan.records.count + skipped
        let tornTail = !content.isEmpty && content.last != 0x0A
        let now = clock.wall() / 1_000_000_000
        replay.prune(now: now, boot: clock.boot(), bootID: clock.bootID)
        loaded = (replay.count, skipped)
        state = PosixMutex(State(replay: replay, log: log, lines: lines, needsRewrite: skipped > 0 || tornTail || lines > replay.count))
        if skipped > 0 {
            logger.warning("mqtt spool \(path): \(skipped) lines that are not valid command ids were skipped (a torn write, or damage)")
        }
        // Compact now: drops expired ids and garbage, so appends go on after a clean last line.
        try state.withLock { s throws(SpoolError) in
            if s.needsRewrite { try rewriteLocked(&s) } else { s.log.accept(upTo: content.count) }
        }
    }

    deinit { close() }

    func close() {
        let log: RecordLog? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.log
        }
        log?.file.close()
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

    /// A line's text without its newline.
    static func text(of line: ArraySlice<UInt8>) -> [UInt8] {
        Array(line.last == 0x0A ? line.dropLast() : line)
    }

    /// The file's lines for `RecordScanner`: a record is a whole line that parses and whose CRC matches
    /// (the last one may lack its newline); a resync goes on at the next line that does.
    struct LineFraming: RecordFraming {
        func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame {
            guard offset == 0 || bytes[offset - 1] == 0x0A else { return .invalid }
            var end = offset
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            let line = Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
            guard CommandIDStore.parse(line) != nil else { return end == bytes.count ? .incomplete : .invalid }
            return .record(size: min(end + 1, bytes.count) - offset)
        }
    }

    /// Opens the file: never through a symbolic link, only a regular file of at most `maxFileBytes`.
    static func openFile(_ path: String) throws(SpoolError) -> RecordLog {
        do throws(RecordLog.OpenError) {
            return try RecordLog.open(path, mode: 0o600, create: true, maxBytes: maxFileBytes)
        } catch {
            switch error {
            case .symbolicLink:
                throw SpoolError("mqtt-spool \(path): a symbolic link, not the spool's own file; remove it (the spool makes its own)")
            case .notRegular:
                throw SpoolError("mqtt-spool \(path): not a regular file; remove it (the spool makes its own)")
            case .tooLarge(let size):
                throw SpoolError("mqtt-spool \(path): \(size) bytes, more than the \(maxFileBytes) a command id file can hold; "
                                 + "not one of ours: remove it")
            case .system(let e):
                throw SpoolError(e)
            }
        }
    }

    private func appendLocked(_ s: inout State, _ bytes: [UInt8]) throws(SpoolError) {
        switch s.log.append(bytes) {
        case .success:
            s.lines += 1
        case .failure(let failure):
            s.needsRewrite = true
            switch failure {
            case .full(let limit): throw SpoolError("mqtt-spool \(path): the command id file has reached \(limit) bytes")
            case .write(let e, _): throw SpoolError(SystemError("write", path, e))
            case .sync(let e): throw SpoolError(SystemError("fdatasync", path, e))
            }
        }
    }

    /// Replaces the file with the live ids (`RecordLog.replace`: `commands.tmp`, fsync, rename, directory fsync).
    private func rewriteLocked(_ s: inout State) throws(SpoolError) {
        var text: [UInt8] = []
        for (id, entry) in s.replay.entries.sorted(by: { $0.key < $1.key }) { text += CommandIDStore.line(id, entry) }
        do throws(AtomicFile.Failure) {
            try s.log.replace(with: text)
        } catch {
            throw SpoolError(error.error)
        }
        s.lines = s.replay.count
        s.needsRewrite = false
    }
}

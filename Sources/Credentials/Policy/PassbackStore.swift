#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// The store could not be opened, read or written: names the file and what failed (with its errno).
public struct PassbackStoreError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "anti-passback store \(path): \(message)" }
}

/// The last accepted use of each credential number on this kiosk (anti-passback), in an append-only
/// file beside policy-state-file (`STATE.passback`) that survives a restart and a power cut.
///
/// Each record is `SGP1`, the direction (1 entry, 2 exit), the wall-clock second of the use (8 bytes
/// big-endian), the number's length (2 bytes big-endian), the number's bytes and a CRC-32 of all that.
/// A record is appended and `fdatasync`ed (`RecordLog`) before `record` returns, so a read is reported
/// accepted only once its use is on disk. Only the last record can be torn (each is synced before the
/// next is written): a torn tail is cut off at load. Damage with valid records after it is skipped
/// (the scan resynchronises at the next valid record) and the file rewritten with what was read; the
/// uses in the damaged bytes are lost (those passes may pass once without a passback), never a crash.
///
/// Bounded: at most `maxNumbers` numbers are held. Uses older than the timeout no longer matter and are
/// dropped when the file is rewritten (when dropped and overwritten records outnumber the held ones, or
/// the file nears `maxFileBytes`). When more numbers than the bound are used within the timeout, the
/// oldest uses are dropped (a tenth of the bound at once).
///
/// Numbers are compared byte for byte. The daemon's credential policy owns it; a reload opens it again
/// after the old run stopped. Each look-up and record first follows what another instance of the file
/// did (records appended, the file rewritten), so two instances never lose each other's uses; two
/// processes writing at the same moment are not supported (there is no lock).
public final class PassbackStore: Sendable {
    /// Which way an accepted read moved its holder.
    public enum Direction: UInt8, Sendable {
        case entry = 1
        case exit = 2

        /// "entered" / "exited", for logs and refusal details.
        public var verb: String { self == .entry ? "entered" : "exited" }
    }

    /// The last accepted use of one number.
    public struct Use: Equatable, Sendable {
        public var direction: Direction
        /// Wall-clock seconds since the epoch.
        public var at: Int64
        public init(direction: Direction, at: Int64) {
            self.direction = direction
            self.at = at
        }
    }

    public let path: String
    /// Uses at least this old (seconds) no longer count and may be dropped; 0: they always count.
    public let timeoutSeconds: Int64
    public let maxNumbers: Int
    private let state: PosixMutex<State>
    /// A test fault (SCANGATE_FAULT=park-at:passback-...): nil in service.
    private let parking: FaultParking?

    static let magic: [UInt8] = Array("SGP1".utf8)
    /// Magic, direction, time, length: the bytes before the number.
    static let headerSize = 15
    /// The longest number recorded (a pass's number is at most 128 characters).
    public static let maxNumberBytes = 1024
    public static let defaultMaxNumbers = 100_000
    /// Larger files are refused at open; the file is rewritten before an append would pass it.
    static let maxFileBytes = 32 << 20

    struct State {
        /// nil once closed.
        var log: RecordLog?
        var uses: [[UInt8]: Use]
        /// Records in the file, overwritten and dropped ones included.
        var records: Int
        /// Set when the file's state is unknown (a failed fdatasync); every record then fails.
        var broken: String?
    }

    /// The path of the store beside policy-state-file.
    public static func path(stateFile: String) -> String { stateFile + ".passback" }

    /// Opens (creating it with mode 0600 if needed) and loads the store; a torn tail is cut off, damage
    /// skipped and the file rewritten. Uses older than `timeoutSeconds` at `now` are not loaded.
    public init(path: String, timeoutSeconds: Int64, now: Int64, maxNumbers: Int = PassbackStore.defaultMaxNumbers,
                parking: FaultParking? = FaultParking.fromEnvironment()) throws(PassbackStoreError) {
        self.path = path
        self.parking = parking
        self.timeoutSeconds = timeoutSeconds
        let bound = max(1, maxNumbers)
        self.maxNumbers = bound
        self.state = PosixMutex(try Self.load(path, timeout: timeoutSeconds, now: now, bound: bound))
    }

    /// Opens and reads the file: the uses it holds, a torn tail cut off, damage skipped and the file rewritten.
    static func load(_ path: String, timeout: Int64, now: Int64, bound: Int) throws(PassbackStoreError) -> State {
        let log: RecordLog
        do throws(RecordLog.OpenError) {
            log = try RecordLog.open(path, mode: 0o600, create: true, maxBytes: Self.maxFileBytes)
        } catch {
            switch error {
            case .symbolicLink: throw PassbackStoreError(path: path, message: "cannot open: \(Errno(rawValue: ELOOP))")
            case .notRegular: throw PassbackStoreError(path: path, message: "is not a regular file")
            case .tooLarge(let size): throw PassbackStoreError(path: path, message: "is \(size) bytes, more than the \(Self.maxFileBytes) it may reach")
            case .system(let e): throw PassbackStoreError(path: path, message: "\(e)")
            }
        }
        guard log.permissions & 0o022 == 0 else {
            throw PassbackStoreError(path: path, message: "mode 0\(String(log.permissions, radix: 8)) lets group or others write it; chmod 600")
        }
        let bytes: [UInt8]
        switch log.read(from: 0) {
        case .success(let b): bytes = b
        case .failure(let e): throw PassbackStoreError(path: path, message: "\(e)")
        }
        let scan = bytes.withUnsafeBytes { RecordScanner.scan($0, framing: Framing()) }
        var uses: [[UInt8]: Use] = [:]
        for range in scan.records {
            guard let (number, use) = Self.parse(bytes[range]) else { continue }
            uses[number] = use
        }
        var state = State(log: log, uses: uses, records: scan.records.count, broken: nil)
        let drop = Self.dropOld(&state.uses, timeout: timeout, now: now, keep: bound)
        if !scan.damaged.isEmpty || drop > 0 || Self.shouldCompact(state) {
            // Damage in the middle (or a bound to apply): rewrite the file with what was read.
            if let problem = Self.compact(&state) { throw PassbackStoreError(path: path, message: problem) }
        } else if scan.tail != nil {
            // A torn last record: its read was never reported accepted.
            if case .failure(let e) = log.cut(to: scan.validEnd) {
                throw PassbackStoreError(path: path, message: "cannot cut off a torn last record: ftruncate: \(e)")
            }
        } else {
            log.accept(upTo: scan.validEnd)
        }
        return state
    }

    /// Follows the file when another instance changed it since this one last looked (a reload that
    /// opened the store again and then failed, leaving this one in use): records appended are read,
    /// a file rewritten or removed is loaded again. Returns the problem when that fails.
    private func catchUp(_ s: inout State, now: Int64) -> String? {
        guard let log = s.log else { return "closed" }
        var onDisk = stat()
        let size: Int
        switch log.currentSize() {
        case .success(let n): size = n
        case .failure(let e): return "\(e)"
        }
        if stat(path, &onDisk) != 0 || UInt64(onDisk.st_dev) != log.device || UInt64(onDisk.st_ino) != log.inode || size < log.size {
            do throws(PassbackStoreError) {
                s = try Self.load(path, timeout: timeoutSeconds, now: now, bound: maxNumbers)
                return nil
            } catch {
                return error.message
            }
        }
        guard size > log.size else { return nil }
        let bytes: [UInt8]
        switch log.read(from: log.size) {
        case .success(let b): bytes = b
        case .failure(let e): return "\(e)"
        }
        let scan = bytes.withUnsafeBytes { RecordScanner.scan($0, framing: Framing()) }
        for range in scan.records {
            guard let (number, use) = Self.parse(bytes[range]) else { continue }
            s.uses[number] = use
        }
        s.records += scan.records.count
        if scan.firstProblem != nil {
            do throws(PassbackStoreError) {
                s = try Self.load(path, timeout: timeoutSeconds, now: now, bound: maxNumbers)
            } catch {
                return error.message
            }
        } else {
            log.accept(upTo: log.size + scan.validEnd)
        }
        return nil
    }

    /// Numbers held.
    public var count: Int { state.withLock { $0.uses.count } }
    /// Records in the file (overwritten ones included).
    public var fileRecords: Int { state.withLock { $0.records } }

    /// The last accepted use of `number`, whatever its age.
    public func lastUse(_ number: [UInt8]) -> Use? {
        state.withLock { $0.uses[number] }
    }

    /// The last use of `number` when it still counts at `now`: younger than the timeout (or any age with
    /// timeout 0). A use in the future (the clock went back) counts.
    /// Reads first what another instance changed in the file (see `catchUp`).
    public func recentUse(_ number: [UInt8], now: Int64) -> Use? {
        let last = state.withLock { s -> Use? in
            if s.broken == nil, s.log != nil, let problem = catchUp(&s, now: now) { s.broken = problem }
            return s.uses[number]
        }
        guard let use = last else { return nil }
        if timeoutSeconds == 0 { return use }
        let (age, overflow) = now.subtractingReportingOverflow(use.at)
        return !overflow && age >= timeoutSeconds ? nil : use
    }

    /// Records `number`'s use, durable (fdatasync) when this returns success.
    public func record(_ number: [UInt8], _ direction: Direction, at now: Int64) -> Result<Void, PassbackStoreError> {
        guard !number.isEmpty, number.count <= Self.maxNumberBytes else {
            return .failure(PassbackStoreError(path: path, message: "a number of \(number.count) bytes is not recorded (1 to \(Self.maxNumberBytes))"))
        }
        return state.withLock { s -> Result<Void, PassbackStoreError> in
            if let broken = s.broken { return .failure(PassbackStoreError(path: path, message: broken)) }
            guard s.log != nil else { return .failure(PassbackStoreError(path: path, message: "closed")) }
            if let problem = catchUp(&s, now: now) {
                s.broken = problem
                return .failure(PassbackStoreError(path: path, message: problem))
            }
            let record = Self.record(number, Use(direction: direction, at: now))
            if s.uses[number] == nil && s.uses.count >= maxNumbers {
                _ = Self.dropOld(&s.uses, timeout: timeoutSeconds, now: now, keep: maxNumbers - 1)
            }
            if Self.shouldCompact(s) || (s.log?.size ?? 0) + record.count > Self.maxFileBytes {
                _ = Self.dropOld(&s.uses, timeout: timeoutSeconds, now: now, keep: maxNumbers)
                if let problem = Self.compact(&s) { return .failure(PassbackStoreError(path: path, message: problem)) }
            }
            guard let log = s.log else { return .failure(PassbackStoreError(path: path, message: "closed")) }
            switch log.append(record, afterWrite: { parking?.reach("passback-record-written") }) {
            case .success:
                break
            case .failure(.full(let limit)):
                return .failure(PassbackStoreError(path: path, message: "has reached \(limit) bytes"))
            case .failure(.write(let e, let cutBack)):
                if let t = cutBack { s.broken = "write failed (\(e)) and cutting the partial record off failed too (ftruncate: \(t))" }
                return .failure(PassbackStoreError(path: path, message: "write: \(e)"))
            case .failure(.sync(let e)):
                if e.meansNoSpace, case .success = log.cut(to: log.size) {
                    return .failure(PassbackStoreError(path: path, message: "fdatasync: \(e); the record was cut off again"))
                }
                s.broken = "fdatasync failed (\(e)); restart once the disk is fixed"
                return .failure(PassbackStoreError(path: path, message: "fdatasync: \(e)"))
            }
            s.uses[number] = Use(direction: direction, at: now)
            s.records += 1
            parking?.reach("passback-record-synced")
            return .success(())
        }
    }

    /// Closes the file; every later record fails. Also done when the store is released.
    public func close() {
        state.withLock { $0.log = nil }
    }

    // MARK: - Records

    static func record(_ number: [UInt8], _ use: Use) -> [UInt8] {
        var out = magic
        out.append(use.direction.rawValue)
        let t = UInt64(bitPattern: use.at)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: t >> UInt64(shift))) }
        out.append(UInt8(truncatingIfNeeded: number.count >> 8))
        out.append(UInt8(truncatingIfNeeded: number.count))
        out += number
        let crc = CRC32.checksum(out)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out
    }

    /// A whole valid record's number and use (the framing has checked its CRC).
    static func parse(_ r: ArraySlice<UInt8>) -> ([UInt8], Use)? {
        let b = r.startIndex
        guard r.count >= headerSize + 4, let direction = Direction(rawValue: r[b + 4]) else { return nil }
        var t: UInt64 = 0
        for i in 5..<13 { t = t << 8 | UInt64(r[b + i]) }
        let length = Int(r[b + 13]) << 8 | Int(r[b + 14])
        guard r.count == headerSize + length + 4 else { return nil }
        return (Array(r[(b + headerSize)..<(b + headerSize + length)]), Use(direction: direction, at: Int64(bitPattern: t)))
    }

    /// `SGP1` records for `RecordScanner`: the length says where the CRC is.
    struct Framing: RecordFraming {
        func frame(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordFrame {
            let left = bytes.count - offset
            for i in 0..<min(4, left) where bytes[offset + i] != PassbackStore.magic[i] { return .invalid }
            guard left >= PassbackStore.headerSize else { return .incomplete }
            guard Direction(rawValue: bytes[offset + 4]) != nil else { return .invalid }
            let length = Int(bytes[offset + 13]) << 8 | Int(bytes[offset + 14])
            guard length >= 1, length <= PassbackStore.maxNumberBytes else { return .invalid }
            let size = PassbackStore.headerSize + length + 4
            guard left >= size else { return .incomplete }
            let crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size - 4)]))
            var stored: UInt32 = 0
            for i in (size - 4)..<size { stored = stored << 8 | UInt32(bytes[offset + i]) }
            return crc == stored ? .record(size: size) : .invalid
        }
    }

    // MARK: - Bounds

    /// Drops uses that no longer count at `now`, then, while more than `keep` are held, the oldest (down
    /// to nine tenths of `keep`, so this does not run at every record). Returns how many went.
    static func dropOld(_ uses: inout [[UInt8]: Use], timeout: Int64, now: Int64, keep: Int) -> Int {
        let before = uses.count
        if timeout > 0 {
            uses = uses.filter { entry in
                let (age, overflow) = now.subtractingReportingOverflow(entry.value.at)
                return overflow || age < timeout
            }
        }
        if uses.count > keep {
            let target = max(0, keep - keep / 10)
            let kept = uses.sorted { $0.value.at > $1.value.at }.prefix(target)
            uses = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        return before - uses.count
    }

    static func shouldCompact(_ s: State) -> Bool {
        let dead = s.records - s.uses.count
        return dead >= 1024 && dead >= s.uses.count
    }

    /// Rewrites the file with the uses held (`RecordLog.replace`: temp file, fsync, rename, fsync of the
    /// directory). Before the rename the old file stays; after it, a failure leaves the store broken.
    static func compact(_ s: inout State) -> String? {
        guard let log = s.log else { return "closed" }
        var bytes: [UInt8] = []
        for (number, use) in s.uses.sorted(by: { $0.value.at < $1.value.at }) { bytes += record(number, use) }
        do throws(AtomicFile.Failure) {
            try log.replace(with: bytes)
        } catch {
            guard error.replaced else { return "rewriting the file: \(error)" }
            s.records = s.uses.count
            s.broken = "rewriting the file: \(error) after the rename; restart once the disk is fixed"
            return s.broken
        }
        s.records = s.uses.count
        return nil
    }
}

/// Anti-passback at this door, as the site policy in force says: the mode, the door's direction and the
/// timeout, with the store of last uses.
public struct PassbackRule: Sendable {
    public let mode: SitePolicy.Antipassback.Mode
    /// The direction a read here moves its holder (the door's role: in or out).
    public let direction: PassbackStore.Direction
    public let store: PassbackStore

    public init(mode: SitePolicy.Antipassback.Mode, direction: PassbackStore.Direction, store: PassbackStore) {
        self.mode = mode
        self.direction = direction
        self.store = store
    }

    /// The rule a site policy asks for, or nil with why it does not apply (nil reason: mode off).
    public static func wanted(_ policy: SitePolicy) -> (direction: PassbackStore.Direction?, off: String?) {
        guard policy.antipassback.mode != .off else { return (nil, nil) }
        switch policy.door.role {
        case .in: return (.entry, nil)
        case .out: return (.exit, nil)
        case .both:
            return (nil, "anti-passback \(policy.antipassback.mode.rawValue) in site policy ver \(policy.version) does not apply: door role both (the direction of a read is unknown); anti-passback is off")
        }
    }

    /// The earlier use that makes this read a passback: the last one was in this door's direction, and
    /// younger than the timeout.
    public func passback(_ number: [UInt8], now: Int64) -> PassbackStore.Use? {
        guard let use = store.recentUse(number, now: now), use.direction == direction else { return nil }
        return use
    }
}

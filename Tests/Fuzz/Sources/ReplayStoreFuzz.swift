#if canImport(Glibc)
import Glibc
#endif
import Credentials
import Platform

/// The one-time store on a hostile file (issue 19): any bytes either load or are refused with one line
/// naming the file. A file that loads keeps every consumed pass: a key it held is refused as replayed,
/// also after a consume with a wall clock stepped far ahead (which must drop nothing); a new key is fresh
/// once, then replayed, also in a second store on the same file.
enum ReplayStoreFuzz {
    static let directory: String = {
        var info = stat()
        let dir = stat("/dev/shm", &info) == 0 ? "/dev/shm" : "/tmp"
        return "\(dir)/scangate-fuzz-replay-\(getpid())"
    }()

    static let now: Int64 = 1_800_000_000
    static let clock = ReplayClock(boot: { 1000 }, wall: { now }, bootID: BootID(bytes: Array(repeating: 0x5A, count: 16)))

    /// A record as the format's description (ReplayStore's doc comment) gives it, read again here:
    /// 64-byte `SGO2` records (hold-until at 4, the key at 12, the boot id at 28, the boot clock at 44,
    /// the boot hold at 52, a CRC-32 of the first 60 bytes at 60) and 32-byte `SGR1` ones (the expiry at
    /// 4, the key at 12, a CRC of the first 28 at 28).
    struct Record {
        var key: ReplayKey
        /// Both clocks allow dropping it at wall `ahead` and boot `bootNow`, by the rules stated there:
        /// a record of this boot once its boot clock count is done, another boot's once a count started
        /// at load is done (only a zero count), a first-format one never within a day.
        var droppable: Bool
    }

    static func be(_ b: ArraySlice<UInt8>) -> Int64 { Int64(bitPattern: b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }

    static func records(_ bytes: [UInt8], bootNow: Int64, ahead: Int64) -> [Record] {
        var out: [Record] = []
        var at = 0
        while at + 4 <= bytes.count {
            let magic = String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
            let size = magic == "SGO2" ? 64 : magic == "SGR1" ? 32 : 0
            guard size > 0, at + size <= bytes.count else { break }
            let r = Array(bytes[at..<(at + size)])
            let crc = r.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard CRC32.checksum(r.prefix(size - 4)) == crc else { break }
            let key = ReplayKey(high: UInt64(bitPattern: be(r[12..<20])), low: UInt64(bitPattern: be(r[20..<28])))
            var droppable = false
            if size == 64 {
                let holdUntil = be(r[4..<12]), bootAt = be(r[44..<52]), hold = max(0, be(r[52..<60]))
                let sameBoot = Array(r[28..<44]) == (clock.bootID?.bytes ?? [])
                let (deadline, overflow) = (sameBoot ? bootAt : bootNow).addingReportingOverflow(hold)
                droppable = holdUntil <= ahead && !overflow && deadline <= bootNow
            }
            out.append(Record(key: key, droppable: droppable))
            at += size
        }
        require(bytes.count - at <= 64, "a store with \(bytes.count - at) bytes of damage after its records loaded")
        return out
    }

    @Sendable static func run(_ bytes: [UInt8]) {
        mkdir(directory, 0o700)
        let path = directory + "/store"
        unlink(path)
        unlink(path + ".tmp")
        guard ImageFuzz.write(bytes, to: path) else { return require(false, "cannot write \(path)") }
        chmod(path, 0o600)
        let store: ReplayStore
        do throws(ReplayStoreError) {
            store = try ReplayStore(path: path, clock: clock)
        } catch {
            let line = error.description
            require(line.hasPrefix("credential-replay-store \(path): ") && !line.contains("\n"), "refusal: \(line)")
            return
        }
        let ahead = now + 2 * 86_400
        let parsed = records(bytes, bootNow: clock.boot(), ahead: ahead)
        let held = Set(parsed.map(\.key))
        // Keys the clocks do not let go: one record of the key that is not droppable is enough.
        let kept = Set(parsed.filter { !$0.droppable }.map(\.key))
        require(store.entryCount == held.count, "\(store.entryCount) entries for \(held.count) distinct records")
        // A wall clock two days ahead: consumes there prune nothing that the boot clock still holds.
        for key in held.prefix(4) {
            require(store.consume(key, holdUntil: ahead + 10, now: ahead) == .replayed, "a held pass was fresh again")
        }
        let fresh = ReplayKey(high: 0xFEED_FACE_0000_0001, low: UInt64(bytes.count))
        guard !held.contains(fresh) else { return }
        require(store.consume(fresh, holdUntil: ahead + 10, now: ahead) == .fresh, "a new pass was not fresh")
        require(store.consume(fresh, holdUntil: ahead + 10, now: ahead) == .replayed, "a new pass was fresh twice")
        for key in kept.prefix(8) { require(store.contains(key), "a held pass was dropped by the wall clock alone") }
        if let again = try? ReplayStore(path: path, clock: clock) {
            require(again.contains(fresh), "a second store does not see the consumed pass")
            require(again.entryCount == held.count + 1, "a second store holds \(again.entryCount), not \(held.count + 1)")
        } else {
            require(false, "the file the store wrote does not load again")
        }
    }
}

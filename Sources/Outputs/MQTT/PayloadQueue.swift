/// The events waiting for the spool thread: first in, first out, bounded in bytes. When a new one would
/// go over the bound the oldest are dropped, and their memory with them (the slot is emptied at once,
/// not kept until the spool thread gets round to it), so however long the spool thread is stuck (an
/// fdatasync on a dying SD card) the queue holds at most `limitBytes`.
///
/// A ring buffer of slots; each entry costs its payload plus `entryOverhead` bytes against the bound,
/// so even empty payloads cannot grow the slot array without end. Not thread-safe: the owner locks.
struct PayloadQueue {
    /// What one entry counts for besides its payload (the slot's array header and bookkeeping).
    static let entryOverhead = 64
    let limitBytes: Int
    private var slots: [[UInt8]] = []
    private var start = 0
    private(set) var count = 0
    /// The bytes charged against `limitBytes` (payloads plus overhead).
    private(set) var chargedBytes = 0

    init(limitBytes: Int) {
        self.limitBytes = max(PayloadQueue.entryOverhead, limitBytes)
    }

    var isEmpty: Bool { count == 0 }

    /// The payload bytes the slots really hold, counted slot by slot (dropped and taken slots included,
    /// which must be empty): what the queue keeps in memory.
    var storedPayloadBytes: Int { slots.reduce(0) { $0 + $1.count } }
    var capacity: Int { slots.count }

    private static func cost(_ p: [UInt8]) -> Int { p.count + entryOverhead }

    /// Appends `payload`; returns how many of the oldest were dropped to stay within the bound (the newest
    /// is always kept, even when it alone is over).
    mutating func push(_ payload: [UInt8]) -> Int {
        reserve(count + 1)
        slots[(start + count) % slots.count] = payload
        count += 1
        chargedBytes += PayloadQueue.cost(payload)
        return trim()
    }

    /// Puts `batch` back in front (a batch the spool could not write), oldest first; returns how many of
    /// the oldest were dropped to stay within the bound.
    mutating func pushFront(_ batch: [[UInt8]]) -> Int {
        guard !batch.isEmpty else { return 0 }
        reserve(count + batch.count)
        for p in batch.reversed() {
            start = (start + slots.count - 1) % slots.count
            slots[start] = p
            count += 1
            chargedBytes += PayloadQueue.cost(p)
        }
        return trim()
    }

    /// Takes up to `maxCount` of the oldest.
    mutating func pop(maxCount: Int) -> [[UInt8]] {
        let n = min(maxCount, count)
        var out: [[UInt8]] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(removeOldest()) }
        shrinkIfSparse()
        return out
    }

    private mutating func removeOldest() -> [UInt8] {
        let p = slots[start]
        slots[start] = []
        start = (start + 1) % slots.count
        count -= 1
        chargedBytes -= PayloadQueue.cost(p)
        if count == 0 { start = 0 }
        return p
    }

    private mutating func trim() -> Int {
        var dropped = 0
        while chargedBytes > limitBytes, count > 1 {
            _ = removeOldest()
            dropped += 1
        }
        if dropped > 0 { shrinkIfSparse() }
        return dropped
    }

    /// Room for `needed` entries, in order from slot 0.
    private mutating func reserve(_ needed: Int) {
        guard needed > slots.count else { return }
        rebuild(capacity: max(16, slots.count * 2, needed))
    }

    /// A slot array far larger than what it holds (after a burst) is made smaller again.
    private mutating func shrinkIfSparse() {
        guard slots.count > 64, count * 4 < slots.count else { return }
        rebuild(capacity: max(16, count * 2))
    }

    private mutating func rebuild(capacity: Int) {
        var fresh = [[UInt8]](repeating: [], count: capacity)
        for i in 0..<count { fresh[i] = slots[(start + i) % slots.count] }
        slots = fresh
        start = 0
    }
}

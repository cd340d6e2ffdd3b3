import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Positions, reading and acknowledging.
extension EventSpool {
    // MARK: - Positions

    func index(_ s: State, _ segment: UInt64) -> Int? { s.segments.firstIndex { $0.first == segment } }

    /// `p` with damaged bytes skipped and the end of a segment that is not the last moved to the start of
    /// the next one: where reading at `p` really goes on.
    func normalized(_ s: State, _ start: SpoolPosition) -> SpoolPosition {
        var p = start
        while let i = index(s, p.segment) {
            if let hole = s.segments[i].holes.first(where: { $0.start == p.offset && p.record < $0.record }) {
                p = SpoolPosition(segment: p.segment, offset: hole.end, record: hole.record)
                continue
            }
            if i + 1 < s.segments.count, p.offset >= s.segments[i].durableSize {
                let next = s.segments[i + 1].first
                p = SpoolPosition(segment: next, offset: 0, record: max(p.record, next))
                continue
            }
            break
        }
        return p
    }

    /// The header of the record at `p`, read from the durable bytes of segment `index`.
    func readHeader(_ segment: Segment, at p: SpoolPosition) -> SpoolFiles.Header? {
        let count = min(SpoolFiles.headerSize, segment.durableSize - p.offset)
        guard count >= SpoolFiles.legacyHeaderSize else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        guard preadAll(segment.fd, &bytes, offset: p.offset) else { return nil }
        return bytes.withUnsafeBytes { SpoolFiles.header($0, at: 0) }
    }

    // MARK: - Read and acknowledge

    /// Up to `maxCount` durable records from `position` (nil: the head), at most about `maxBytes`.
    /// A position the head has passed (records dropped meanwhile) reads from the head. Damaged records
    /// are skipped (counted and logged once).
    public func read(from position: SpoolPosition?, maxCount: Int, maxBytes: Int = 1 << 20) -> [SpoolRecord] {
        state.withLock { s in
            guard !s.closed else { return [] }
            var at = position.map { $0.record < s.head.record ? s.head : $0 } ?? s.head
            var out: [SpoolRecord] = []
            var bytes = 0
            while out.count < maxCount, bytes < maxBytes {
                at = normalized(s, at)
                guard at.record < s.durableEnd else { break }
                guard let i = index(s, at.segment) else {
                    // The segment is gone (dropped): go on at the head.
                    if at == s.head { break }
                    at = s.head
                    continue
                }
                guard at.offset < s.segments[i].durableSize else { break }
                switch readRecord(s.segments[i], at: at) {
                case .record(let r):
                    out.append(r)
                    bytes += r.payload.count
                    at = r.next
                case .damaged(let reason):
                    damagedLocked(&s, index: i, at: at, reason: reason)
                }
            }
            return out
        }
    }

    enum ReadResult {
        case record(SpoolRecord)
        case damaged(String)
    }

    func readRecord(_ segment: Segment, at position: SpoolPosition) -> ReadResult {
        guard let h = readHeader(segment, at: position) else { return .damaged("a record header that is not valid") }
        guard h.number == position.record else { return .damaged("record \(h.number) where \(position.record) was expected") }
        let end = position.offset + h.recordSize
        guard end <= segment.durableSize else { return .damaged("a record that runs past the end of what was written") }
        var whole = [UInt8](repeating: 0, count: h.recordSize)
        guard preadAll(segment.fd, &whole, offset: position.offset) else { return .damaged("a short read of a record") }
        guard whole.withUnsafeBytes({ SpoolFiles.crcMatches($0, recordAt: 0, h) }) else { return .damaged("a record whose checksum does not match") }
        let next = SpoolPosition(segment: segment.first, offset: end, record: h.number + 1)
        return .record(SpoolRecord(number: h.number, stamp: h.stamp, payload: Array(whole[h.size...]), next: next))
    }

    /// Damage at `p` in segment `index`, found while the spool runs (bit rot, or an outside write after
    /// the records were synced): reading resynchronises at the next valid record of the durable bytes;
    /// the records in between are lost, counted and logged. Nothing is truncated (an append may be
    /// writing past `durableSize`) and the head moves only when it was at `p`. Returns the records lost.
    @discardableResult
    func damagedLocked(_ s: inout State, index i: Int, at p: SpoolPosition, reason: String) -> UInt64 {
        let segment = s.segments[i]
        let isLast = i + 1 == s.segments.count
        let upper = isLast ? s.durableEnd : s.segments[i + 1].first
        var hole: Hole?
        let span = segment.durableSize - p.offset
        if span > 1, upper > p.record + 1 {
            var bytes = [UInt8](repeating: 0, count: span)
            if preadAll(segment.fd, &bytes, offset: p.offset),
               let found = bytes.withUnsafeBytes({ SpoolFiles.resync($0, from: 1, numbers: (p.record + 1)..<upper) }) {
                hole = Hole(start: p.offset, end: p.offset + found.offset, record: found.header.number, lost: found.header.number - p.record)
            }
        }
        let resume = max(upper, p.record + 1)
        let h = hole ?? Hole(start: p.offset, end: segment.durableSize, record: resume, lost: resume - p.record)
        s.segments[i].holes.append(h)
        s.depth.records -= min(h.lost, s.depth.records)
        s.depth.bytes -= min(h.end - h.start, s.depth.bytes)
        s.depth.droppedDamaged += h.lost
        if s.head == p {
            s.head = normalized(s, p)
            s.headDirty = true
        }
        logger.error("mqtt spool \(directory)/\(SpoolFiles.segmentName(segment.first)): \(reason) at offset \(p.offset) "
                     + "(damage after the records were written: bit rot or an outside write); "
                     + "\(h.lost) events lost (records \(p.record)-\(h.record - 1)); reading goes on at record \(h.record); "
                     + "\(s.depth.droppedDamaged) lost to damage so far", rateLimitKey: "mqtt-spool-damaged")
        return h.lost
    }

    /// The broker acknowledged every record before `next`: the head moves there; segments wholly
    /// before it are removed. `refused` of them were not delivered but refused for good by the broker
    /// (counted as `droppedRefused`). The head file is written later (`persistHead`).
    public func acknowledge(upTo next: SpoolPosition, refused: UInt64 = 0) {
        state.withLock { s in
            guard !s.closed, next.record > s.head.record, next.record <= s.durableEnd else { return }
            let (records, bytes) = spanLocked(s, from: s.head, to: next)
            s.depth.records -= min(s.depth.records, records)
            s.depth.bytes -= min(s.depth.bytes, bytes)
            s.depth.droppedRefused += min(refused, records)
            s.head = next
            s.headDirty = true
            normalizeHeadLocked(&s)
        }
    }

    /// Records and bytes from `a` to `b` (both positions of records, a <= b), without the damaged bytes
    /// and the records lost in them (already taken off the depth).
    func spanLocked(_ s: State, from a: SpoolPosition, to b: SpoolPosition) -> (UInt64, Int) {
        var records = b.record - a.record
        var bytes = 0
        for seg in s.segments where seg.first >= a.segment && seg.first <= b.segment {
            let from = seg.first == a.segment ? a.offset : 0
            let to = seg.first == b.segment ? b.offset : seg.size
            bytes += max(0, to - from)
            for h in seg.holes where h.start >= from && h.end <= to && h.record > (seg.first == a.segment ? a.record : 0)
                && h.record <= b.record {
                records -= min(records, h.lost)
                bytes -= h.end - h.start
            }
        }
        return (records, max(0, bytes))
    }

    /// Moves a head that sits at the end of a segment (or at damaged bytes) to where reading goes on, and
    /// removes the segments wholly behind the head (never the last, active one).
    func normalizeHeadLocked(_ s: inout State) {
        let moved = normalized(s, s.head)
        if moved != s.head {
            s.head = moved
            s.headDirty = true
        }
        while s.segments.count > 1, s.segments[0].first < s.head.segment {
            let first = s.segments.removeFirst()
            let path = directory + "/" + SpoolFiles.segmentName(first.first)
            EventSpool.closeFile(first.fd, path, logger)
            EventSpool.removeFile(path, logger)
        }
    }
}

import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Dropping records (full, too old) and the head file.
extension EventSpool {
    // MARK: - Drops

    /// Drops the record at the head because the spool is full; false when there is none that can be read.
    /// A damaged head record is skipped as damage (counted there) and counts as progress.
    func dropHeadLocked(_ s: inout State) -> Bool {
        normalizeHeadLocked(&s)
        guard s.head.record < s.durableEnd, let i = index(s, s.head.segment), s.head.offset < s.segments[i].durableSize else { return false }
        guard let h = readHeader(s.segments[i], at: s.head), h.number == s.head.record,
              s.head.offset + h.recordSize <= s.segments[i].durableSize else {
            damagedLocked(&s, index: i, at: s.head, reason: "a record header that is not valid")
            return true
        }
        s.head = SpoolPosition(segment: s.head.segment, offset: s.head.offset + h.recordSize, record: h.number + 1)
        s.headDirty = true
        s.depth.records -= min(1, s.depth.records)
        s.depth.bytes -= min(h.recordSize, s.depth.bytes)
        s.depth.droppedFull += 1
        logger.warning("mqtt spool \(directory): the spool is full (mqtt-spool-max-mb = \(limits.maxBytes >> 20) MiB): dropped the oldest event "
                       + "(record \(h.number), spooled \(WallClock.rfc3339(nanoseconds: h.stamp.wall))); "
                       + "\(s.depth.droppedFull) dropped so far for this reason", rateLimitKey: "mqtt-spool-drop-full")
        normalizeHeadLocked(&s)
        return true
    }

    /// Drops the records older than the age limit. Their age is judged as `SpoolClock.age` says; a record
    /// whose age is unknown (stamped in another boot with a clock that was not synchronised) is kept, but
    /// blocks nothing: records are in the order they were spooled, so when a later record is known to be
    /// too old, every record before it is too, and all of them go. Returns how many were dropped.
    @discardableResult
    public func expire() -> Int {
        guard limits.maxAgeNanoseconds > 0 else { return 0 }
        let synchronized = clock.wallSynchronized()
        return state.withLock { s in
            guard !s.closed else { return 0 }
            normalizeHeadLocked(&s)
            var at = s.head
            if let r = s.expiryResume, r.synchronized == synchronized, r.position.record > s.head.record,
               index(s, r.position.segment) != nil {
                at = r.position
            }
            var expiredUpTo: (next: SpoolPosition, stamp: SpoolStamp)?
            var resume: SpoolPosition?
            var scanned = 0
            scan: while scanned < EventSpool.expiryScanLimit {
                at = normalized(s, at)
                guard at.record < s.durableEnd, let i = index(s, at.segment), at.offset < s.segments[i].durableSize else {
                    resume = nil
                    break
                }
                guard let h = readHeader(s.segments[i], at: at), h.number == at.record,
                      at.offset + h.recordSize <= s.segments[i].durableSize else {
                    damagedLocked(&s, index: i, at: at, reason: "a record header that is not valid")
                    continue
                }
                scanned += 1
                let next = SpoolPosition(segment: at.segment, offset: at.offset + h.recordSize, record: h.number + 1)
                switch clock.age(of: h.stamp) {
                case .known(let age) where age > limits.maxAgeNanoseconds:
                    expiredUpTo = (next, h.stamp)
                case .known:
                    // Fresh: everything after it was spooled later. The next scan can start here.
                    resume = at
                    break scan
                case .unknown:
                    break
                }
                at = next
                resume = at
            }
            s.expiryResume = resume.map { ($0, synchronized) }
            guard let expiredUpTo else { return 0 }
            let first = s.head.record
            let (records, bytes) = spanLocked(s, from: s.head, to: expiredUpTo.next)
            s.depth.records -= min(records, s.depth.records)
            s.depth.bytes -= min(bytes, s.depth.bytes)
            s.depth.droppedExpired += records
            s.head = expiredUpTo.next
            s.headDirty = true
            normalizeHeadLocked(&s)
            logger.warning("mqtt spool \(directory): dropped \(records) events older than mqtt-spool-max-age-h "
                           + "(\(limits.maxAgeNanoseconds / 3_600_000_000_000) h) (records \(first)-\(expiredUpTo.next.record - 1), "
                           + "the newest of them spooled \(WallClock.rfc3339(nanoseconds: expiredUpTo.stamp.wall))); "
                           + "\(s.depth.droppedExpired) dropped so far for this reason", rateLimitKey: "mqtt-spool-drop-expired")
            return Int(records)
        }
    }

    // MARK: - Head file

    /// Writes the head (the first undelivered record) if it moved; with `sync`, also fdatasyncs it.
    public func persistHead(sync: Bool) {
        state.withLock { s in
            guard !s.closed else { return }
            writeHeadLocked(&s, sync: sync)
        }
    }

    func writeHeadLocked(_ s: inout State, sync: Bool) {
        guard s.headDirty || s.persistedHead != s.head.record else {
            return
        }
        s.headGeneration += 1
        var slot = [UInt8](repeating: 0, count: SpoolFiles.headSlotSize)
        SpoolFiles.put32(&slot, 0, SpoolFiles.headMagic)
        SpoolFiles.put64(&slot, 4, s.headGeneration)
        SpoolFiles.put64(&slot, 12, s.head.record)
        let crc = slot.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[4..<20])) }
        SpoolFiles.put32(&slot, 20, crc)
        let offset = Int(s.headGeneration % 2) * SpoolFiles.headSlotSize
        let head = FileDescriptor(rawValue: headFD)
        switch head.writeAll(toAbsoluteOffset: offset, slot) {
        case .success: break
        case .failure(let e):
            logger.error("mqtt spool \(directory)/head: cannot write the head: \(e) (events may be sent again after a restart)",
                         rateLimitKey: "mqtt-spool-head")
            return
        }
        if sync, case .failure(let e) = head.dataSync() {
            // Not known to be on disk: it stays dirty and is written (to the other slot) again next time.
            logger.error("mqtt spool \(directory)/head: cannot sync the head: \(e) (events may be sent again after a restart)",
                         rateLimitKey: "mqtt-spool-head")
            s.headDirty = true
            return
        }
        s.persistedHead = s.head.record
        s.headDirty = false
    }
}

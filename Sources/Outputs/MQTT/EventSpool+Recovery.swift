import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// The spool's files: opening, recovery, closing and removing.
extension EventSpool {
    // MARK: - Files

    /// close(2), with a failure logged (the data was synced before; nothing is retried).
    static func closeFile(_ fd: Int32, _ path: String, _ logger: Logger) {
        if case .failure(let e) = FileDescriptor(rawValue: fd).close() {
            logger.warning("mqtt spool \(path): close: \(e)", rateLimitKey: "mqtt-spool-close")
        }
    }

    /// unlink(2); a file already gone is fine, any other failure is logged (the file stays behind).
    static func removeFile(_ path: String, _ logger: Logger) {
        if case .failure(let e) = FilePath.remove(path) {
            logger.warning("mqtt spool \(path): cannot remove it: \(e) (it stays on disk)", rateLimitKey: "mqtt-spool-unlink")
        }
    }

    // MARK: - Opening

    static func makeDirectory(_ path: String) throws(SpoolError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw SpoolError("mqtt-spool \(path): not a directory") }
            guard access(path, W_OK | X_OK) == 0 else {
                throw SpoolError("mqtt-spool \(path): not writable by this user: \(Errno.current)")
            }
            return
        }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty, stat(parent, &info) != 0 { try makeDirectory(parent) }
        guard mkdir(path, 0o750) == 0 || errno == EEXIST else {
            throw SpoolError(SystemError("mkdir", path, .current))
        }
        do throws(SystemError) { try Directory.sync(parent.isEmpty ? "/" : parent) } catch { throw SpoolError(error) }
    }

    static func listSegments(_ directory: String) throws(SpoolError) -> [UInt64] {
        let names: [String]
        do { names = try Directory.entries(directory) } catch { throw SpoolError(error) }
        return names.compactMap(SpoolFiles.segmentNumber(fromName:)).sorted()
    }

    /// The head file's best slot: its generation and the first record not yet delivered; nil when no slot is valid.
    static func readHead(_ fd: Int32) -> Result<(generation: UInt64, record: UInt64)?, Errno> {
        let bytes: [UInt8]
        switch FileDescriptor(rawValue: fd).readAll(fromAbsoluteOffset: 0, count: 2 * SpoolFiles.headSlotSize) {
        case .success(let b): bytes = b
        case .failure(let e): return .failure(e)
        }
        let n = bytes.count
        var best: (generation: UInt64, record: UInt64)?
        bytes.withUnsafeBytes { raw in
            for slot in 0..<2 where (slot + 1) * SpoolFiles.headSlotSize <= n {
                let o = slot * SpoolFiles.headSlotSize
                guard SpoolFiles.get32(raw, o) == SpoolFiles.headMagic else { continue }
                let crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: raw[(o + 4)..<(o + 20)]))
                guard crc == SpoolFiles.get32(raw, o + 20) else { continue }
                let generation = SpoolFiles.get64(raw, o + 4), record = SpoolFiles.get64(raw, o + 12)
                if generation > (best?.generation ?? 0) || best == nil { best = (generation, record) }
            }
        }
        return .success(best)
    }

    /// A segment file that may be read: opened, a regular file, at most a segment's size.
    struct Candidate {
        let first: UInt64
        let fd: Int32
        let path: String
        let size: Int
    }

    /// Scans every segment, cuts a torn tail, skips (and counts) damage elsewhere, finds the head,
    /// removes delivered segments.
    static func recover(directory: String, headFD: Int32, logger: Logger) throws(SpoolError) -> (State, Recovery) {
        var recovery = Recovery()
        let storedHead: (generation: UInt64, record: UInt64)?
        switch readHead(headFD) {
        case .success(let h): storedHead = h
        case .failure(let e): throw SpoolError(SystemError("read", directory + "/head", e))
        }
        let headRecord = storedHead?.record ?? 0

        // Pass 1: which files are ours to read. Only a regular file of at most a segment's size is read
        // (issue 16: every input bounded); a symlink, a FIFO or a device put in the spool's place is left
        // alone and said so, and blocks nothing.
        var candidates: [Candidate] = []
        func closeAll() { for c in candidates { closeFile(c.fd, c.path, logger) } }
        for first in try listSegments(directory) {
            let path = directory + "/" + SpoolFiles.segmentName(first)
            let fd: Int32
            switch FileDescriptor.open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) {
            case .success(let d): fd = d.rawValue
            case .failure(let e) where e.rawValue == ELOOP || e.rawValue == ENXIO || e.rawValue == EISDIR:
                recovery.notes.append("\(SpoolFiles.segmentName(first)) is not a regular file (\(e)); left in place and not read")
                continue
            case .failure(let e):
                closeAll()
                throw SpoolError(SystemError("open", path, e))
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let e = Errno.current
                closeFile(fd, path, logger)
                closeAll()
                throw SpoolError(SystemError("fstat", path, e))
            }
            guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= 0, Int(info.st_size) <= SpoolFiles.maxSegmentFileBytes else {
                recovery.notes.append(info.st_mode & S_IFMT == S_IFREG
                    ? "\(SpoolFiles.segmentName(first)) is \(info.st_size) bytes, over a segment's \(SpoolFiles.maxSegmentFileBytes); left in place and not read"
                    : "\(SpoolFiles.segmentName(first)) is not a regular file; left in place and not read")
                closeFile(fd, path, logger)
                continue
            }
            // Back to blocking I/O for a regular file (O_NONBLOCK only kept a FIFO's open from waiting).
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
                let e = Errno.current
                closeFile(fd, path, logger)
                closeAll()
                throw SpoolError(SystemError("fcntl", path, e))
            }
            candidates.append(Candidate(first: first, fd: fd, path: path, size: Int(info.st_size)))
        }

        // Pass 2: record by record, one file in memory at a time.
        var segments: [Segment] = []
        var expected: UInt64? = nil
        var head: SpoolPosition? = nil
        var live: (records: UInt64, bytes: Int) = (0, 0)
        var damaged: UInt64 = 0
        /// Of the records first..<end, how many the broker had not acknowledged (the head file says).
        func undelivered(_ first: UInt64, _ end: UInt64) -> UInt64 { end > max(first, headRecord) ? end - max(first, headRecord) : 0 }
        for (n, c) in candidates.enumerated() {
            let name = SpoolFiles.segmentName(c.first)
            if let e = expected, c.first < e {
                recovery.notes.append("\(name) overlaps the segment before it; left in place and not read")
                closeFile(c.fd, c.path, logger)
                continue
            }
            let isLast = n + 1 == candidates.count
            let upper = isLast ? UInt64.max : candidates[n + 1].first
            let content: [UInt8]
            let read = FileDescriptor(rawValue: c.fd).readAll(fromAbsoluteOffset: 0, count: c.size)
            if case .success(let bytes) = read, bytes.count == c.size { content = bytes } else {
                // A read error, or a file that shrank under us (nothing else should touch it).
                var e = Errno.ioError
                if case .failure(let failed) = read { e = failed }
                for s in segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
                for rest in candidates[n...] { closeFile(rest.fd, rest.path, logger) }
                throw SpoolError(SystemError("read", c.path, e))
            }
            var offset = 0
            var number = c.first
            var holes: [Hole] = []
            var cutAt: Int? = nil
            content.withUnsafeBytes { raw in
                while offset < c.size {
                    let problem: String
                    if let h = SpoolFiles.header(raw, at: offset) {
                        let whole = offset + h.recordSize <= c.size
                        if h.number == number, whole, SpoolFiles.crcMatches(raw, recordAt: offset, h) {
                            if number >= headRecord {
                                if head == nil { head = SpoolPosition(segment: c.first, offset: offset, record: number) }
                                live.records += 1
                                live.bytes += h.recordSize
                            }
                            offset += h.recordSize
                            number += 1
                            continue
                        }
                        if h.number > number, h.number < upper, whole, SpoolFiles.crcMatches(raw, recordAt: offset, h) {
                            // Whole records missing with no damaged byte: a gap in the numbers.
                            let lost = undelivered(number, h.number)
                            damaged += lost
                            recovery.notes.append("\(name): record \(h.number) at offset \(offset) where \(number) was expected; "
                                                  + "\(lost) events lost")
                            holes.append(Hole(start: offset, end: offset, record: h.number, lost: h.number - number))
                            number = h.number
                            continue
                        }
                        problem = !whole ? "a torn record" : h.number != number ? "record \(h.number) where \(number) was expected"
                            : "a record whose checksum does not match"
                    } else {
                        let left = c.size - offset
                        let magic = left >= 4 ? SpoolFiles.get32(raw, offset) : 0
                        problem = left < SpoolFiles.legacyHeaderSize || (magic == SpoolFiles.recordMagic && left < SpoolFiles.headerSize)
                            ? "a torn record header" : "bytes that are not a record"
                    }
                    if let found = SpoolFiles.resync(raw, from: offset + 1, numbers: number..<upper) {
                        // Damage in the middle: only the records it hit are lost.
                        let lost = undelivered(number, found.header.number)
                        damaged += lost
                        recovery.notes.append("\(name): \(problem) at offset \(offset); bytes \(offset)-\(found.offset - 1) are damaged "
                                              + "(bit rot or an outside write, not a torn write): \(lost) events lost "
                                              + "(records \(number)-\(found.header.number - 1)); reading goes on at record "
                                              + "\(found.header.number) (offset \(found.offset))")
                        holes.append(Hole(start: offset, end: found.offset, record: found.header.number, lost: found.header.number - number))
                        offset = found.offset
                        number = found.header.number
                        continue
                    }
                    if isLast {
                        // The damage reaches the end of the last segment: a write a crash or power cut interrupted.
                        recovery.notes.append("\(name): \(problem) at offset \(offset); \(c.size - offset) bytes cut off "
                                              + "(a write that a crash or power cut interrupted)")
                        cutAt = offset
                    } else {
                        // The end of a segment that is not the last is damaged: its remaining records are lost.
                        let resume = max(upper, number)
                        let lost = undelivered(number, resume)
                        damaged += lost
                        recovery.notes.append("\(name): \(problem) at offset \(offset); the rest of the segment (\(c.size - offset) bytes) "
                                              + "is damaged (bit rot or an outside write): \(lost) events lost")
                        holes.append(Hole(start: offset, end: c.size, record: resume, lost: resume - number))
                        offset = c.size
                        number = resume
                    }
                    break
                }
            }
            var size = c.size
            if let cutAt {
                let segment = FileDescriptor(rawValue: c.fd)
                let truncated = segment.truncate(to: cutAt).flatMap { segment.dataSync() }
                if case .failure(let e) = truncated {
                    for s in segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
                    for rest in candidates[n...] { closeFile(rest.fd, rest.path, logger) }
                    throw SpoolError(SystemError("truncate", c.path, e))
                }
                size = cutAt
            }
            segments.append(Segment(first: c.first, fd: c.fd, size: size, durableSize: size, holes: holes))
            expected = number
        }
        let next = max(headRecord, 1, expected ?? 1)
        var state = State(head: SpoolPosition(segment: segments.last?.first ?? next, offset: segments.last?.size ?? 0, record: next),
                          nextRecord: next, durableEnd: next)
        if let head { state.head = head }
        state.segments = segments
        state.headGeneration = storedHead?.generation ?? 0
        state.depth.records = live.records
        state.depth.bytes = live.bytes
        state.depth.recovered = live.records
        state.depth.droppedDamaged = damaged
        state.persistedHead = headRecord
        state.headDirty = state.head.record != headRecord
        recovery.records = live.records
        recovery.damaged = damaged
        // Remove segments wholly delivered; also empty non-last ones.
        var removed: [Segment] = []
        while state.segments.count > 1, state.segments[0].first < state.head.segment {
            removed.append(state.segments.removeFirst())
        }
        for seg in removed {
            let path = directory + "/" + SpoolFiles.segmentName(seg.first)
            closeFile(seg.fd, path, logger)
            removeFile(path, logger)
        }
        if !removed.isEmpty {
            do throws(SystemError) { try Directory.sync(directory) } catch {
                for s in state.segments { closeFile(s.fd, directory + "/" + SpoolFiles.segmentName(s.first), logger) }
                throw SpoolError(error)
            }
        }
        return (state, recovery)
    }
}

/// pread(2) until `buffer` is full; false on an error or end of file first.
func preadAll(_ fd: Int32, _ buffer: inout [UInt8], offset: Int) -> Bool {
    let count = buffer.count
    return buffer.withUnsafeMutableBytes { FileDescriptor(rawValue: fd).readAll(fromAbsoluteOffset: offset, into: $0) } == .success(count)
}

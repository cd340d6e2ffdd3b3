#if canImport(Glibc)
import Glibc
#endif
import CGpiod
import Platform

/// The request, value and edge-event calls over libgpiod 1.6 (v1 API): every request is a bulk one.
extension SystemGpiodCalls {
    private func pointer(_ line: GpiodLineHandle) -> OpaquePointer? { OpaquePointer(bitPattern: line.address) }

    /// A gpiod_line_bulk of `lines` (at most GPIOD_LINE_BULK_MAX_LINES), or nil for an empty, too long
    /// or invalid list.
    private func bulk(_ lines: [GpiodLineHandle]) -> gpiod_line_bulk? {
        guard !lines.isEmpty, lines.count <= Int(GPIOD_LINE_BULK_MAX_LINES) else { return nil }
        var bulk = gpiod_line_bulk()
        gpiod_line_bulk_init(&bulk)
        for line in lines {
            guard let p = pointer(line) else { return nil }
            gpiod_line_bulk_add(&bulk, p)
        }
        return bulk
    }

    private func failure(_ fallback: Errno = .ioError) -> Errno {
        let e = Errno.current
        return e.rawValue == 0 ? fallback : e
    }

    public func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno> {
        guard var bulk = bulk(lines), initialValues.count == lines.count else { return .failure(.invalidArgument) }
        let values = initialValues.map { Int32($0 == 0 ? 0 : 1) }
        let flags = activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        errno = 0
        let rc = values.withUnsafeBufferPointer { v in
            gpiod_line_request_bulk_output_flags(&bulk, consumer, flags, v.baseAddress)
        }
        return rc == 0 ? .success(()) : .failure(failure())
    }

    public func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno> {
        guard var bulk = bulk(lines), values.count == lines.count else { return .failure(.invalidArgument) }
        errno = 0
        let rc = values.withUnsafeBufferPointer { v in gpiod_line_set_value_bulk(&bulk, v.baseAddress) }
        return rc == 0 ? .success(()) : .failure(failure())
    }

    public func preparedSetter(_ lines: [GpiodLineHandle], valueSets: [[Int32]]) -> GpiodPreparedSetter {
        guard let bulk = bulk(lines), valueSets.allSatisfy({ $0.count == lines.count }) else {
            return InvalidSetter()
        }
        return BulkSetter(bulk: bulk, valueSets: valueSets)
    }

    public func release(_ lines: [GpiodLineHandle]) {
        guard var bulk = bulk(lines) else { return }
        gpiod_line_release_bulk(&bulk)
    }

    public func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno> {
        guard let p = pointer(line) else { return .failure(.invalidArgument) }
        let flags = activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        errno = 0
        return gpiod_line_request_both_edges_events_flags(p, consumer, flags) == 0 ? .success(()) : .failure(failure())
    }

    public func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno> {
        guard let p = pointer(line) else { return .failure(.invalidArgument) }
        errno = 0
        let v = gpiod_line_get_value(p)
        return v < 0 ? .failure(failure()) : .success(v)
    }

    public func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno> {
        guard var all = bulk(lines) else { return .failure(.invalidArgument) }
        var ready = gpiod_line_bulk()
        gpiod_line_bulk_init(&ready)
        var timeout = timespec(tv_sec: Int(timeoutNanoseconds / 1_000_000_000),
                               tv_nsec: Int(timeoutNanoseconds % 1_000_000_000))
        while true {
            errno = 0
            let rc = gpiod_line_event_wait_bulk(&all, &timeout, &ready)
            if rc == 0 { return .success([]) }
            if rc > 0 { break }
            let e = failure()
            if e == .interrupted { return .success([]) }   // the caller loops with its own deadline
            return .failure(e)
        }
        var out: [GpiodLineHandle] = []
        let count = Int(gpiod_line_bulk_num_lines(&ready))
        for i in 0..<count {
            guard let p = gpiod_line_bulk_get_line(&ready, UInt32(i)) else { continue }
            out.append(GpiodLineHandle(address: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(p)))))
        }
        return .success(out)
    }

    public func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno> {
        guard let p = pointer(line) else { return .failure(.invalidArgument) }
        var event = gpiod_line_event()
        while true {
            errno = 0
            if gpiod_line_event_read(p, &event) == 0 { break }
            let e = failure()
            if e != .interrupted { return .failure(e) }
        }
        let ns = UInt64(max(0, event.ts.tv_sec)) * 1_000_000_000 + UInt64(max(0, event.ts.tv_nsec))
        let edge: GpiodEdgeEvent.Edge = event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE) ? .rising : .falling
        return .success(GpiodEdgeEvent(edge: edge, timestampNanoseconds: ns))
    }
}

/// The bulk and every value set in memory of their own, made once: `set` is gpiod_line_set_value_bulk
/// and nothing else (no allocation, no list walk). Used by one thread (the Wiegand transmitter's).
private final class BulkSetter: GpiodPreparedSetter {
    private let bulk: UnsafeMutablePointer<gpiod_line_bulk>
    private let values: UnsafeMutablePointer<Int32>
    private let width: Int
    private let count: Int

    init(bulk: gpiod_line_bulk, valueSets: [[Int32]]) {
        self.bulk = .allocate(capacity: 1)
        self.bulk.initialize(to: bulk)
        width = valueSets.first?.count ?? 0
        count = valueSets.count
        values = .allocate(capacity: max(1, width * count))
        for (i, set) in valueSets.enumerated() {
            for (j, v) in set.enumerated() { (values + i * width + j).initialize(to: v) }
        }
    }

    deinit {
        bulk.deallocate()
        values.deallocate()
    }

    func set(_ index: Int) -> Result<Void, Errno> {
        guard index >= 0, index < count else { return .failure(.invalidArgument) }
        if gpiod_line_set_value_bulk(bulk, values + index * width) == 0 { return .success(()) }
        let e = Errno.current
        return .failure(e.rawValue == 0 ? .ioError : e)
    }
}

/// For lines that cannot make a bulk (none, too many, an invalid handle): every set fails with EINVAL.
private final class InvalidSetter: GpiodPreparedSetter {
    func set(_ index: Int) -> Result<Void, Errno> { .failure(.invalidArgument) }
}

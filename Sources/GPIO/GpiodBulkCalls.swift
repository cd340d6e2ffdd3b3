import Platform

/// An edge libgpiod read from a line requested for events.
public struct GpiodEdgeEvent: Equatable, Sendable {
    public enum Edge: Equatable, Sendable { case rising, falling }
    public var edge: Edge
    /// The kernel's timestamp of the edge (CLOCK_MONOTONIC on the kernels ScanGate runs on), nanoseconds.
    public var timestampNanoseconds: UInt64

    public init(edge: Edge, timestampNanoseconds: UInt64) {
        self.edge = edge
        self.timestampNanoseconds = timestampNanoseconds
    }
}

/// The libgpiod 1.6 calls beyond `GpiodCalls` that the Wiegand output needs: several output lines in
/// one request, and input lines with edge events. A refinement, so the fakes of `GpiodCalls` (the
/// GPIO tests, the bench's in-memory chip) stay as they are; `SystemGpiodCalls` implements both.
///
/// One fact shapes this seam (libgpiod 1.6 lib/core.c): lines requested together share one kernel
/// line handle, and GPIOHANDLE_SET_LINE_VALUES sets every line of that handle at once. So a line of a
/// bulk request must never be set alone with `setValue` (libgpiod would send its value for the first
/// line of the handle and 0 for the others); `setValues` always sets every line of the request.
public protocol GpiodBulkCalls: GpiodCalls {
    /// gpiod_line_request_bulk_output_flags: every line of `lines` (same chip) as an output in one
    /// request, with `consumer`, the active-low flag when asked, and initial logical values (in order).
    /// EBUSY: another consumer holds one of them (none is requested then).
    func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno>
    /// gpiod_line_set_value_bulk: logical values for every line of one bulk request, in request order.
    func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno>
    /// gpiod_line_release_bulk.
    func release(_ lines: [GpiodLineHandle])
    /// gpiod_line_request_both_edges_events_flags: an input reporting rising and falling edges, with
    /// `consumer` and the active-low flag when asked. EBUSY: another consumer holds the line.
    func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno>
    /// gpiod_line_get_value: the logical level of a requested line (the kernel applies active-low).
    func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno>
    /// gpiod_line_event_wait_bulk: waits at most `timeoutNanoseconds` for an event on any of `lines`
    /// (each requested for events, same chip); returns those with an event pending (empty on timeout).
    func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno>
    /// gpiod_line_event_read: one pending event (blocks when none is pending: call after `waitEvents`).
    func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno>
    /// A setter for the lines of one bulk request with every value set it will use made ahead, so that
    /// setting them is one C call with nothing built first (the Wiegand pulse path times a pulse from
    /// the clock reading just before the call). The default goes through `setValues`.
    func preparedSetter(_ lines: [GpiodLineHandle], valueSets: [[Int32]]) -> GpiodPreparedSetter
}

/// Sets the lines of one bulk request to one of the value sets it was prepared with.
public protocol GpiodPreparedSetter: AnyObject {
    /// gpiod_line_set_value_bulk with value set `index` (in the order given when prepared).
    func set(_ index: Int) -> Result<Void, Errno>
}

extension GpiodBulkCalls {
    public func preparedSetter(_ lines: [GpiodLineHandle], valueSets: [[Int32]]) -> GpiodPreparedSetter {
        ThroughSetValues(calls: self, lines: lines, valueSets: valueSets)
    }
}

private final class ThroughSetValues: GpiodPreparedSetter {
    let calls: GpiodBulkCalls
    let lines: [GpiodLineHandle]
    let valueSets: [[Int32]]

    init(calls: GpiodBulkCalls, lines: [GpiodLineHandle], valueSets: [[Int32]]) {
        self.calls = calls
        self.lines = lines
        self.valueSets = valueSets
    }

    func set(_ index: Int) -> Result<Void, Errno> {
        guard valueSets.indices.contains(index) else { return .failure(.invalidArgument) }
        return calls.setValues(lines, valueSets[index])
    }
}

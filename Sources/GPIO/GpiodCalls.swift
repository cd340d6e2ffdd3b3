import Platform

/// An open chip handle from the gpiod calls seam (the real one is a `struct gpiod_chip *`). Opaque: only
/// the implementation that produced it can use it.
public struct GpiodChipHandle: Hashable, Sendable {
    public let address: UInt
    public init(address: UInt) { self.address = address }
}

/// A line handle belonging to an open chip (the real one is a `struct gpiod_line *`, owned by the chip).
public struct GpiodLineHandle: Hashable, Sendable {
    public let address: UInt
    public init(address: UInt) { self.address = address }
}

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

/// The libgpiod 1.6 (v1 API) calls ScanGate uses, one method per C function, after apple/swift-system:
/// failures return the errno libgpiod left. Code outside the GPIO target uses them through `GPIOChip` and
/// `LineRequest`. `SystemGpiodCalls` is the real one; `MemoryGpiod` (target MemoryGPIO) the one fake.
/// Handles are valid until `closeChip`; a request ends with `release` or `closeChip`.
///
/// One fact shapes this seam (libgpiod 1.6 lib/core.c): lines requested together share one kernel line
/// handle, and GPIOHANDLE_SET_LINE_VALUES sets every line of that handle at once. So every request is a
/// bulk request (one line is a bulk of one, as gpiod_line_request itself is), and `setValues` always sets
/// every line of one request.
public protocol GpiodCalls: Sendable {
    /// The chip device nodes present: "/dev/gpiochip0", … in number order (readdir of /dev).
    func chipPaths() -> [String]
    /// gpiod_chip_open(path).
    func openChip(path: String) -> Result<GpiodChipHandle, Errno>
    /// gpiod_chip_open_by_name("gpiochip0").
    func openChip(name: String) -> Result<GpiodChipHandle, Errno>
    /// gpiod_chip_open_by_label("pinctrl-rp1"); ENOENT when no chip has the label.
    func openChip(label: String) -> Result<GpiodChipHandle, Errno>
    /// gpiod_chip_open_lookup: libgpiod's best guess (path, name, label or number).
    func openChip(lookup: String) -> Result<GpiodChipHandle, Errno>
    /// gpiod_chip_close: releases every line still requested through the chip.
    func closeChip(_ chip: GpiodChipHandle)
    /// gpiod_chip_name ("gpiochip0").
    func chipName(_ chip: GpiodChipHandle) -> String
    /// gpiod_chip_label ("pinctrl-rp1").
    func chipLabel(_ chip: GpiodChipHandle) -> String
    /// gpiod_chip_num_lines.
    func numLines(_ chip: GpiodChipHandle) -> Int
    /// gpiod_chip_get_line(offset).
    func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno>
    /// gpiod_chip_find_line(name); ENOENT when the chip has no line of that name.
    func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno>
    /// gpiod_line_name; nil for an unnamed line.
    func lineName(_ line: GpiodLineHandle) -> String?
    /// gpiod_line_consumer: who holds the line (as of when the handle was read); nil when free.
    func lineConsumer(_ line: GpiodLineHandle) -> String?
    /// gpiod_line_request_bulk_output_flags: every line of `lines` (same chip) as an output in one
    /// request, with `consumer`, the active-low flag when asked, and initial logical values (in order).
    /// EBUSY: another consumer holds one of them (none is requested then).
    func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno>
    /// gpiod_line_request_both_edges_events_flags: an input reporting rising and falling edges, with
    /// `consumer` and the active-low flag when asked. EBUSY: another consumer holds the line.
    func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno>
    /// gpiod_line_set_value_bulk: logical values for every line of one request, in request order (the
    /// kernel applies active-low).
    func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno>
    /// gpiod_line_get_value: the logical level of a requested line (the kernel applies active-low).
    func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno>
    /// gpiod_line_release_bulk.
    func release(_ lines: [GpiodLineHandle])
    /// gpiod_line_event_wait_bulk: waits at most `timeoutNanoseconds` for an event on any of `lines`
    /// (each requested for events); returns those with an event pending (empty on timeout).
    func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno>
    /// gpiod_line_event_read: one pending event (blocks when none is pending: call after `waitEvents`).
    func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno>
    /// A setter for the lines of one request with every value set it will use made ahead, so that
    /// setting them is one C call with nothing built first (the Wiegand pulse path times a pulse from
    /// the clock reading just before the call). The default goes through `setValues`.
    func preparedSetter(_ lines: [GpiodLineHandle], valueSets: [[Int32]]) -> GpiodPreparedSetter
}

/// Sets the lines of one request to one of the value sets it was prepared with.
public protocol GpiodPreparedSetter: AnyObject {
    /// gpiod_line_set_value_bulk with value set `index` (in the order given when prepared).
    func set(_ index: Int) -> Result<Void, Errno>
}

extension GpiodCalls {
    public func preparedSetter(_ lines: [GpiodLineHandle], valueSets: [[Int32]]) -> GpiodPreparedSetter {
        ThroughSetValues(calls: self, lines: lines, valueSets: valueSets)
    }
}

private final class ThroughSetValues: GpiodPreparedSetter {
    let calls: GpiodCalls
    let lines: [GpiodLineHandle]
    let valueSets: [[Int32]]

    init(calls: GpiodCalls, lines: [GpiodLineHandle], valueSets: [[Int32]]) {
        self.calls = calls
        self.lines = lines
        self.valueSets = valueSets
    }

    func set(_ index: Int) -> Result<Void, Errno> {
        guard valueSets.indices.contains(index) else { return .failure(.invalidArgument) }
        return calls.setValues(lines, valueSets[index])
    }
}

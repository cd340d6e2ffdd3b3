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

/// The libgpiod 1.6 (v1 API) calls ScanGate uses, one method per C function, after apple/swift-system:
/// failures return the errno libgpiod left. `SystemGpiodCalls` is the real one; unit tests use a fake.
/// Handles are valid until `closeChip`; a line handle's request ends with `release` or `closeChip`.
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
    /// gpiod_line_request as an output with `consumer`, the active-low flag when asked, and the initial
    /// logical value (0 = inactive). EBUSY: another consumer holds the line.
    func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32)
        -> Result<Void, Errno>
    /// gpiod_line_set_value with a logical value (the kernel applies active-low).
    func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno>
    /// gpiod_line_release.
    func release(_ line: GpiodLineHandle)
}

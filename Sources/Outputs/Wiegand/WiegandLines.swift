import GPIO
import Platform
import Settings

/// D0 and D1: one chip handle and one bulk request of both lines, the single owner of both. The lines
/// are requested together (one kernel line handle) at idle, always set together (so both can never be
/// low at once by a half-applied change), and left idle before they are released. Levels here are
/// logical: 1 = a pulse; the request's active-low flag (the default, `wiegand-active-high` off) makes
/// a pulse a low level on the wire. Not thread-safe: made by the output, then used only by the transmitter
/// thread (hence @unchecked Sendable: handed over once, never shared).
final class WiegandLinePair: @unchecked Sendable {
    static let consumer = "scangate"

    private let calls: GpiodBulkCalls
    private let chipText: String
    private let d0Spec: GPIOLineSpec
    private let d1Spec: GPIOLineSpec
    let activeLow: Bool
    private var chip: GpiodChipHandle?
    private var lines: [GpiodLineHandle] = []
    /// Value sets, in the order of `Levels`: both idle, a pulse on D0, a pulse on D1.
    private var setter: GpiodPreparedSetter?
    private enum Levels: Int { case idle = 0, d0 = 1, d1 = 2 }
    /// "D0 GPIO5 / D1 GPIO6 of scangate-sim (gpiochip0)", once open.
    private(set) var title = ""

    init(calls: GpiodBulkCalls, chip: String, d0: GPIOLineSpec, d1: GPIOLineSpec, activeHigh: Bool) {
        self.calls = calls
        self.chipText = chip
        self.d0Spec = d0
        self.d1Spec = d1
        self.activeLow = !activeHigh
    }

    var isOpen: Bool { !lines.isEmpty }

    /// Opens the chip and requests both lines at idle. Every failure is one line naming the option,
    /// the line and the chip, and what to do about it.
    func open() -> Result<Void, GPIOError> {
        guard !isOpen else { return .success(()) }
        let chip: GpiodChipHandle
        switch GPIOLookup.openChip(chipText, calls: calls) {
        case .success(let c): chip = c
        case .failure(let e): return .failure(e)
        }
        let chipTitle = GPIOLookup.chipTitle(chip, calls: calls)
        func find(_ spec: GPIOLineSpec, _ flag: String) -> Result<GpiodLineHandle, GPIOError> {
            GPIOLookup.findLine(spec, on: chip, flag: flag, calls: calls)
        }
        let d0: GpiodLineHandle, d1: GpiodLineHandle
        switch (find(d0Spec, "--wiegand-d0"), find(d1Spec, "--wiegand-d1")) {
        case (.success(let a), .success(let b)):
            d0 = a
            d1 = b
        case (.failure(let e), _), (_, .failure(let e)):
            calls.closeChip(chip)
            return .failure(e)
        }
        let d0Title = GPIOLookup.lineTitle(d0Spec, line: d0, calls: calls)
        let d1Title = GPIOLookup.lineTitle(d1Spec, line: d1, calls: calls)
        if d0 == d1 {
            calls.closeChip(chip)
            return .failure(GPIOError(.lineConflict,
                "--wiegand-d0 \(d0Spec) and --wiegand-d1 \(d1Spec) are the same line (\(d0Title)) on \(chipTitle); D0 and D1 need a line each"))
        }
        switch calls.requestOutputs([d0, d1], consumer: Self.consumer, activeLow: activeLow, initialValues: [0, 0]) {
        case .success:
            self.chip = chip
            self.lines = [d0, d1]
            self.setter = calls.preparedSetter([d0, d1], valueSets: [[0, 0], [1, 0], [0, 1]])
            self.title = "D0 \(d0Title) / D1 \(d1Title) of \(chipTitle)"
            return .success(())
        case .failure(let e):
            let holders = [(d0, d0Title), (d1, d1Title)].compactMap { line, title -> String? in
                calls.lineConsumer(line).map { "\(title) is held by '\($0)'" }
            }
            calls.closeChip(chip)
            if e == .busy {
                let who = holders.isEmpty ? "another consumer holds one of them" : holders.joined(separator: ", ")
                return .failure(GPIOError(.lineBusy,
                    "Wiegand lines D0 \(d0Title) / D1 \(d1Title) on \(chipTitle) (--wiegand-d0, --wiegand-d1) are busy: \(who); stop that program (gpioinfo \(chipText) shows who holds each line) or choose other lines",
                    errno: e))
            }
            return .failure(GPIOError(.lineFailed,
                "cannot request Wiegand lines D0 \(d0Title) / D1 \(d1Title) on \(chipTitle) as outputs: \(e)", errno: e))
        }
    }

    /// Sets both lines: at most one of them pulsing.
    @inline(__always)
    func set(d0Pulse: Bool, d1Pulse: Bool) -> Result<Void, Errno> {
        precondition(!(d0Pulse && d1Pulse), "Wiegand D0 and D1 must never pulse together")
        guard isOpen else { return .failure(.noDevice) }
        guard let setter else { return .failure(.noDevice) }
        return setter.set((d0Pulse ? Levels.d0 : d1Pulse ? Levels.d1 : Levels.idle).rawValue)
    }

    /// Both lines idle.
    @inline(__always)
    func idle() -> Result<Void, Errno> { set(d0Pulse: false, d1Pulse: false) }

    /// Drives both lines idle, releases them and closes the chip. Idempotent. Returns the error of
    /// driving them idle, if any (they are released and the chip closed regardless).
    @discardableResult
    func close() -> Errno? {
        guard let chip else { return nil }
        var failure: Errno?
        if case .failure(let e) = idle() { failure = e }
        setter = nil
        calls.release(lines)
        calls.closeChip(chip)
        self.chip = nil
        lines = []
        return failure
    }

    deinit { close() }
}

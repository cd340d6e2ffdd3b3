import GPIO
import Platform
import Settings

/// The relay's one line: a chip handle and one output request, the single owner of both. Requested
/// inactive (the door shut), driven with logical levels (1 = energised; the request's active-low flag
/// makes that a low level on the pin with door-relay-active-low), and driven inactive again before it
/// is released. Not thread-safe: `DoorRelayOutput` holds it behind a lock.
final class RelayLine {
    static let consumer = "scangate"

    private let calls: any GpiodCalls
    private let chipText: String
    private let spec: GPIOLineSpec
    let activeLow: Bool
    private var chip: GpiodChipHandle?
    private var line: GpiodLineHandle?
    /// "GPIO26 of scangate-sim (gpiochip0)", once open.
    private(set) var title = ""
    /// The logical level last driven (false = inactive).
    private(set) var active = false

    init(calls: any GpiodCalls, chip: String, line: GPIOLineSpec, activeLow: Bool) {
        self.calls = calls
        self.chipText = chip
        self.spec = line
        self.activeLow = activeLow
    }

    var isOpen: Bool { line != nil }

    /// Opens the chip and requests the line as an output at the inactive level. Each failure is one
    /// message naming the option, the line and the chip.
    func open() -> Result<Void, GPIOError> {
        guard !isOpen else { return .success(()) }
        let chip: GpiodChipHandle
        switch GPIOLookup.openChip(chipText, calls: calls) {
        case .success(let c): chip = c
        case .failure(let e): return .failure(e)
        }
        let chipTitle = GPIOLookup.chipTitle(chip, calls: calls)
        let line: GpiodLineHandle
        switch GPIOLookup.findLine(spec, on: chip, flag: "--" + DoorRelaySettings.Option.line, calls: calls) {
        case .success(let l): line = l
        case .failure(let e):
            calls.closeChip(chip)
            return .failure(e)
        }
        let lineTitle = GPIOLookup.lineTitle(spec, line: line, calls: calls)
        switch calls.requestOutput(line, consumer: Self.consumer, activeLow: activeLow, initialValue: 0) {
        case .success:
            self.chip = chip
            self.line = line
            self.active = false
            self.title = "\(lineTitle) of \(chipTitle)"
            return .success(())
        case .failure(let e):
            let holder = calls.lineConsumer(line)
            calls.closeChip(chip)
            if e == .busy {
                let who = holder.map { "held by '\($0)'" } ?? "held by another consumer"
                return .failure(GPIOError(.lineBusy,
                    "door relay line \(lineTitle) on \(chipTitle) (--\(DoorRelaySettings.Option.line)) is busy: \(who); stop that program (gpioinfo \(chipText) shows who holds each line) or choose another line",
                    errno: e))
            }
            return .failure(GPIOError(.lineFailed,
                "cannot request door relay line \(lineTitle) on \(chipTitle) (--\(DoorRelaySettings.Option.line)) as an output: \(e)",
                errno: e))
        }
    }

    /// Drives the relay: true energises it (the door opens).
    func set(active: Bool) -> Result<Void, Errno> {
        guard let line else { return .failure(.noDevice) }
        let result = calls.setValue(line, active ? 1 : 0)
        if case .success = result { self.active = active }
        return result
    }

    /// Drives the line inactive, releases it and closes the chip. Idempotent. Returns the error of
    /// driving it inactive, if any (it is released and the chip closed regardless).
    @discardableResult
    func close() -> Errno? {
        guard let chip, let line else { return nil }
        var failure: Errno?
        if case .failure(let e) = calls.setValue(line, 0) { failure = e }
        calls.release(line)
        calls.closeChip(chip)
        self.chip = nil
        self.line = nil
        self.active = false
        return failure
    }

    deinit { close() }
}

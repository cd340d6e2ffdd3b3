import GPIO
import Platform
import Settings

/// The relay's one line: one `LineRequest`, the single owner of it. Requested inactive (the door shut),
/// driven with logical levels (1 = energised; the request's active-low flag makes that a low level on
/// the pin with door-relay-active-low), and driven inactive again before it is released. Not
/// thread-safe: `DoorRelayOutput` holds it behind a lock.
final class RelayLine {
    private let calls: any GpiodCalls
    private let chipText: String
    private let config: LineRequest.Config
    let activeLow: Bool
    private var request: LineRequest?
    /// "GPIO26 of scangate-sim (gpiochip0)", once open.
    private(set) var title = ""
    /// The logical level last driven (false = inactive).
    private(set) var active = false

    init(calls: any GpiodCalls, chip: String, line: GPIOLineSpec, activeLow: Bool) {
        self.calls = calls
        self.chipText = chip
        self.activeLow = activeLow
        self.config = LineRequest.Config(purpose: "door relay", lines: [.init(line, flag: "--" + DoorRelaySettings.Option.line)],
                                         direction: .output(initial: [0]), activeLow: activeLow)
    }

    var isOpen: Bool { request != nil }

    /// Opens the chip and requests the line as an output at the inactive level. Each failure is one
    /// message naming the option, the line and the chip.
    func open() -> Result<Void, GPIOError> {
        guard !isOpen else { return .success(()) }
        return LineRequest.request(chip: chipText, calls: calls, config).map { request in
            self.request = request
            self.active = false
            self.title = request.title
        }
    }

    /// Drives the relay: true energises it (the door opens).
    func set(active: Bool) -> Result<Void, Errno> {
        guard let request else { return .failure(.noDevice) }
        let result = request.setValue(active ? 1 : 0)
        if case .success = result { self.active = active }
        return result
    }

    /// Drives the line inactive, releases it and closes the chip. Idempotent. Returns the error of
    /// driving it inactive, if any (it is released and the chip closed regardless).
    @discardableResult
    func close() -> Errno? {
        guard let request else { return nil }
        let failure = request.release()
        self.request = nil
        self.active = false
        return failure
    }

    deinit { close() }
}

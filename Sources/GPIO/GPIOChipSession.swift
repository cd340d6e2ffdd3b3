import Platform
import Settings

/// One open chip and the output line requests made through it: the single owner of both. Lines are
/// requested with consumer "scangate"; `close` drives every requested line inactive, releases it and
/// closes the chip, on every path. Not thread-safe: owned by the feedback thread.
final class GPIOChipSession {
    static let consumer = "scangate"

    struct Request {
        let line: GpiodLineHandle
        let title: String
        let activeLow: Bool
    }

    let calls: GpiodCalls
    let chip: GpiodChipHandle
    /// "pinctrl-rp1 (gpiochip0)".
    let title: String
    private(set) var requests: [GPIORole: Request] = [:]
    /// Which role resolved to which line (requested or not), so two roles can never share one.
    private var resolved: [GpiodLineHandle: GPIORole] = [:]
    private var closed = false

    private init(calls: GpiodCalls, chip: GpiodChipHandle) {
        self.calls = calls
        self.chip = chip
        self.title = GPIOLookup.chipTitle(chip, calls: calls)
    }

    static func open(_ chipText: String, calls: GpiodCalls) -> Result<GPIOChipSession, GPIOError> {
        GPIOLookup.openChip(chipText, calls: calls).map { GPIOChipSession(calls: calls, chip: $0) }
    }

    /// Finds and requests a role's line as an output at logical level `active` (inactive at start-up).
    /// EBUSY gives an error naming the line, the chip and who holds it.
    func request(_ role: GPIORole, spec: GPIOLineSpec, activeLow: Bool, active: Bool) -> Result<Request, GPIOError> {
        precondition(!closed, "request on a closed GPIO chip session")
        if let existing = requests[role] { return .success(existing) }
        let line: GpiodLineHandle
        switch GPIOLookup.findLine(spec, on: chip, flag: role.flag, calls: calls) {
        case .success(let l): line = l
        case .failure(let e): return .failure(e)
        }
        let lineTitle = GPIOLookup.lineTitle(spec, line: line, calls: calls)
        if let other = resolved[line], other != role {
            return .failure(GPIOError(.lineConflict,
                "line \(lineTitle) on \(title) is given for both the \(other.title) (\(other.flag)) and the \(role.title) (\(role.flag)); each role needs its own line"))
        }
        resolved[line] = role
        switch calls.requestOutput(line, consumer: Self.consumer, activeLow: activeLow, initialValue: active ? 1 : 0) {
        case .success:
            let request = Request(line: line, title: lineTitle, activeLow: activeLow)
            requests[role] = request
            return .success(request)
        case .failure(let e) where e == .busy:
            let holder = calls.lineConsumer(line).map { "held by consumer '\($0)'" } ?? "held by another consumer"
            return .failure(GPIOError(.lineBusy,
                "GPIO line \(lineTitle) on \(title) for the \(role.title) (\(role.flag)) is busy: \(holder)", errno: e))
        case .failure(let e):
            return .failure(GPIOError(.lineFailed,
                "cannot request GPIO line \(lineTitle) on \(title) for the \(role.title) (\(role.flag)) as an output: \(e)",
                errno: e))
        }
    }

    /// Sets a requested role's logical level (true = active; the kernel applies active-low).
    func set(_ role: GPIORole, active: Bool) -> Result<Void, GPIOError> {
        guard !closed, let request = requests[role] else { return .success(()) }
        switch calls.setValue(request.line, active ? 1 : 0) {
        case .success: return .success(())
        case .failure(let e):
            return .failure(GPIOError(.lineFailed,
                "cannot set GPIO line \(request.title) on \(title) for the \(role.title): \(e)", errno: e))
        }
    }

    /// Drives every requested line inactive, releases it and closes the chip. Idempotent. Returns the
    /// errors met while driving lines inactive (the lines are released and the chip closed regardless).
    @discardableResult
    func close() -> [GPIOError] {
        guard !closed else { return [] }
        var errors: [GPIOError] = []
        for role in requests.keys.sorted() {
            if case .failure(let e) = set(role, active: false) { errors.append(e) }
        }
        for (_, request) in requests.sorted(by: { $0.key < $1.key }) { calls.release(request.line) }
        requests.removeAll()
        resolved.removeAll()
        closed = true
        calls.closeChip(chip)
        return errors
    }

    deinit { close() }
}

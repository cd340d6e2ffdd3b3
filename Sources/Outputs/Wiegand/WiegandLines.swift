import Core
import GPIO
import Platform
import Settings

/// Every set of D0/D1 with its CLOCK_MONOTONIC time, as the transmitter drove them (doctor
/// --test-wiegand reports the timing from it). Appended to by the transmitter thread only.
public final class WiegandSetLog: Sendable {
    private let changes = PosixMutex<[WiegandTimingReport.Change]>([])

    public init() { changes.withLock { $0.reserveCapacity(1024) } }

    public var recorded: [WiegandTimingReport.Change] { changes.withLock { $0 } }

    func append(_ values: [Int32]) {
        let now = WiegandClock.now()
        changes.withLock { $0.append(WiegandTimingReport.Change(atNanoseconds: now, values: values)) }
    }
}

/// D0 and D1: one `LineRequest` of both lines, the single owner of them. The lines are requested
/// together (one kernel line handle) at idle, always set together (so both can never be low at once by a
/// half-applied change), and left idle before they are released. Levels here are logical: 1 = a pulse;
/// the request's active-low flag (the default, `wiegand-active-high` off) makes a pulse a low level on the
/// wire. Not thread-safe: made by the output, then used only by the transmitter thread (hence
/// @unchecked Sendable: handed over once, never shared).
final class WiegandLinePair: @unchecked Sendable {
    private let calls: any GpiodCalls
    private let chipText: String
    private let config: LineRequest.Config
    let activeLow: Bool
    private let log: WiegandSetLog?
    private var request: LineRequest?
    /// Value sets, in the order of `Levels`: both idle, a pulse on D0, a pulse on D1.
    private static let valueSets: [[Int32]] = [[0, 0], [1, 0], [0, 1]]
    private var setter: GpiodPreparedSetter?
    private enum Levels: Int { case idle = 0, d0 = 1, d1 = 2 }
    /// "D0 GPIO5 / D1 GPIO6 of scangate-sim (gpiochip0)", once open.
    private(set) var title = ""

    init(calls: any GpiodCalls, chip: String, d0: GPIOLineSpec, d1: GPIOLineSpec, activeHigh: Bool, log: WiegandSetLog? = nil) {
        self.calls = calls
        self.chipText = chip
        self.activeLow = !activeHigh
        self.log = log
        self.config = LineRequest.Config(
            purpose: "Wiegand D0/D1",
            lines: [.init(d0, flag: "--" + WiegandSettings.Option.d0), .init(d1, flag: "--" + WiegandSettings.Option.d1)],
            direction: .output(initial: [0, 0]), activeLow: !activeHigh)
    }

    var isOpen: Bool { request != nil }

    /// Opens the chip and requests both lines at idle. Every failure is one line naming the option,
    /// the line and the chip, and what to do about it.
    func open() -> Result<Void, GPIOError> {
        guard !isOpen else { return .success(()) }
        return LineRequest.request(chip: chipText, calls: calls, config).map { request in
            self.request = request
            self.setter = request.preparedSetter(valueSets: Self.valueSets)
            self.title = "D0 \(request.lineTitles[0]) / D1 \(request.lineTitles[1]) of \(request.chip.title)"
        }
    }

    /// Sets both lines: at most one of them pulsing.
    @inline(__always)
    func set(d0Pulse: Bool, d1Pulse: Bool) -> Result<Void, Errno> {
        precondition(!(d0Pulse && d1Pulse), "Wiegand D0 and D1 must never pulse together")
        guard let setter else { return .failure(.noDevice) }
        let levels = d0Pulse ? Levels.d0 : d1Pulse ? Levels.d1 : Levels.idle
        let result = setter.set(levels.rawValue)
        log?.append(Self.valueSets[levels.rawValue])
        return result
    }

    /// Both lines idle.
    @inline(__always)
    func idle() -> Result<Void, Errno> { set(d0Pulse: false, d1Pulse: false) }

    /// Drives both lines idle, releases them and closes the chip. Idempotent. Returns the error of
    /// driving them idle, if any (they are released and the chip closed regardless).
    @discardableResult
    func close() -> Errno? {
        guard let request else { return nil }
        setter = nil
        log?.append(Self.valueSets[Levels.idle.rawValue])
        let failure = request.release()   // both idle, then released
        self.request = nil
        return failure
    }

    deinit { close() }
}

import Platform
import Settings

/// One open GPIO chip (libgpiod v2's gpiod_chip): the requests made through it hold it, and it is closed
/// when the last of them and its owner let it go. (In the v1 API a chip's close releases every line
/// requested through it, so no request may outlive its chip.) Immutable after `open`.
public final class GPIOChip: @unchecked Sendable {
    public let calls: any GpiodCalls
    let handle: GpiodChipHandle
    /// The chip as configured ("pinctrl-rp1", "gpiochip0", "/dev/gpiochip0").
    public let text: String
    /// "pinctrl-rp1 (gpiochip0)": how messages name it.
    public let title: String
    /// "gpiochip0": the same chip, however it was named.
    public let name: String

    private init(calls: any GpiodCalls, handle: GpiodChipHandle, text: String) {
        self.calls = calls
        self.handle = handle
        self.text = text
        self.title = GPIOLookup.chipTitle(handle, calls: calls)
        let name = calls.chipName(handle)
        self.name = name.isEmpty ? text : name
    }

    /// Opens the chip `text` names (label, name or path; see `GPIOLookup.ChipSpec`).
    public static func open(_ text: String, calls: any GpiodCalls) -> Result<GPIOChip, GPIOError> {
        GPIOLookup.openChip(text, calls: calls).map { GPIOChip(calls: calls, handle: $0, text: text) }
    }

    deinit { calls.closeChip(handle) }

    public var lineCount: Int { calls.numLines(handle) }

    /// The offset a line spec names on this chip (a name is looked up), or the error naming `flag`.
    public func offset(of spec: GPIOLineSpec, flag: String) -> Result<Int, GPIOError> {
        GPIOLookup.findLine(spec, on: handle, flag: flag, calls: calls).flatMap { line in
            if case .offset(let o) = spec { return .success(o) }
            for o in 0..<lineCount {
                if case .success(let l) = calls.line(handle, offset: o), l == line { return .success(o) }
            }
            return .failure(GPIOError(.lineNotFound, "no such line \(spec) on \(title) (\(flag))"))
        }
    }

    /// "GPIO17", "offset 17 (GPIO17)": how messages name a line of this chip.
    public func lineTitle(_ spec: GPIOLineSpec) -> String {
        let line = try? GPIOLookup.findLine(spec, on: handle, flag: "", calls: calls).get()
        return GPIOLookup.lineTitle(spec, line: line, calls: calls)
    }

    /// Requests lines through this chip (gpiod_chip_request_lines).
    public func request(_ config: LineRequest.Config) -> Result<LineRequest, GPIOError> {
        LineRequest.make(chip: self, config)
    }
}

/// Lines requested together, after libgpiod v2's gpiod_line_request: the request owns its lines (and holds
/// their chip), sets and reads their values, waits for and reads their edge events, and releases them
/// (outputs driven inactive first) on `release` or deinit, on every path. Made over the v1 calls Debian 12
/// has. Not thread-safe: one owner at a time.
public final class LineRequest: @unchecked Sendable {
    /// The consumer name every line ScanGate requests carries (gpioinfo shows it).
    public static let consumer = "scangate"

    /// One line of a request and the option that named it (for messages).
    public struct Line: Sendable, Equatable {
        public var spec: GPIOLineSpec
        /// "--door-relay".
        public var flag: String
        public init(_ spec: GPIOLineSpec, flag: String) {
            self.spec = spec
            self.flag = flag
        }
    }

    public enum Direction: Sendable, Equatable {
        /// Outputs at these initial logical values (one per line; 0 = inactive).
        case output(initial: [Int32])
        /// Inputs reporting rising and falling edges.
        case bothEdges
    }

    public struct Config: Sendable {
        /// What the lines are for, in messages: "door relay", "Wiegand D0/D1", "green LED (--led-green)".
        public var purpose: String
        public var lines: [Line]
        public var direction: Direction
        public var activeLow: Bool

        public init(purpose: String, lines: [Line], direction: Direction, activeLow: Bool = false) {
            self.purpose = purpose
            self.lines = lines
            self.direction = direction
            self.activeLow = activeLow
        }
    }

    public let chip: GPIOChip
    public let config: Config
    private let handles: [GpiodLineHandle]
    /// "GPIO17 (offset 17)", one per line.
    public let lineTitles: [String]
    private var released = false

    private init(chip: GPIOChip, config: Config, handles: [GpiodLineHandle], titles: [String]) {
        self.chip = chip
        self.config = config
        self.handles = handles
        self.lineTitles = titles
    }

    /// Opens `chipText` and requests the lines through it; the chip stays open while the request lives.
    public static func request(chip chipText: String, calls: any GpiodCalls, _ config: Config) -> Result<LineRequest, GPIOError> {
        GPIOChip.open(chipText, calls: calls).flatMap { $0.request(config) }
    }

    /// "GPIO26 of scangate-sim (gpiochip0)", "GPIO5, GPIO6 of …".
    public var title: String { "\(lineTitles.joined(separator: ", ")) of \(chip.title)" }

    public var isReleased: Bool { released }

    fileprivate static func make(chip: GPIOChip, _ config: Config) -> Result<LineRequest, GPIOError> {
        let calls = chip.calls
        guard !config.lines.isEmpty else { return .failure(GPIOError(.lineFailed, "no lines to request for the \(config.purpose)")) }
        var handles: [GpiodLineHandle] = [], titles: [String] = []
        for line in config.lines {
            switch GPIOLookup.findLine(line.spec, on: chip.handle, flag: line.flag, calls: calls) {
            case .success(let h):
                let title = GPIOLookup.lineTitle(line.spec, line: h, calls: calls)
                if let i = handles.firstIndex(of: h) {
                    return .failure(GPIOError(.lineConflict,
                        "\(config.lines[i].flag) \(config.lines[i].spec) and \(line.flag) \(line.spec) are the same line (\(title)) on \(chip.title); each needs its own line"))
                }
                handles.append(h)
                titles.append(title)
            case .failure(let e): return .failure(e)
            }
        }
        let flags = config.lines.map(\.flag).joined(separator: ", ")
        let many = handles.count > 1
        let named = "\(config.purpose) line\(many ? "s" : "") \(titles.joined(separator: ", ")) on \(chip.title) (\(flags))"
        let result: Result<Void, Errno>
        switch config.direction {
        case .output(let initial):
            guard initial.count == handles.count else {
                return .failure(GPIOError(.lineFailed, "cannot request \(named): \(initial.count) initial values for \(handles.count) lines"))
            }
            result = calls.requestOutputs(handles, consumer: consumer, activeLow: config.activeLow, initialValues: initial)
        case .bothEdges:
            // v1 has no bulk edge request: each line alone, and those taken are released if one fails.
            var taken: [GpiodLineHandle] = []
            var failure: Errno?
            for h in handles {
                if case .failure(let e) = calls.requestBothEdges(h, consumer: consumer, activeLow: config.activeLow) {
                    failure = e
                    break
                }
                taken.append(h)
            }
            if let failure {
                if !taken.isEmpty { calls.release(taken) }
                result = .failure(failure)
            } else {
                result = .success(())
            }
        }
        switch result {
        case .success:
            return .success(LineRequest(chip: chip, config: config, handles: handles, titles: titles))
        case .failure(let e) where e == .busy:
            let holders = zip(handles, titles).compactMap { h, t -> String? in
                calls.lineConsumer(h).map { many ? "\(t) held by '\($0)'" : "held by '\($0)'" }
            }
            let who = holders.isEmpty ? "held by another consumer" : holders.joined(separator: ", ")
            return .failure(GPIOError(.lineBusy,
                "\(named) \(many ? "are" : "is") busy: \(who); stop that program (gpioinfo \(chip.text) shows who holds each line) or choose another line",
                errno: e))
        case .failure(let e):
            let how: String
            switch config.direction {
            case .output: how = many ? "outputs" : "an output"
            case .bothEdges: how = many ? "inputs with edge events" : "an input with edge events"
            }
            return .failure(GPIOError(.lineFailed, "cannot request \(named) as \(how): \(e)", errno: e))
        }
    }

    // MARK: values

    /// gpiod_line_request_set_values: logical values for every line, in request order.
    public func setValues(_ values: [Int32]) -> Result<Void, Errno> {
        guard !released else { return .failure(.noDevice) }
        return chip.calls.setValues(handles, values)
    }

    /// The one line of a single-line request (or every line) to one logical value.
    public func setValue(_ value: Int32) -> Result<Void, Errno> {
        setValues(Array(repeating: value, count: handles.count))
    }

    /// gpiod_line_request_get_value: the logical level of line `index`.
    public func getValue(_ index: Int = 0) -> Result<Int32, Errno> {
        guard !released, handles.indices.contains(index) else { return .failure(.noDevice) }
        return chip.calls.getValue(handles[index])
    }

    /// A setter with every value set made ahead: setting is one C call (the Wiegand pulse path).
    public func preparedSetter(valueSets: [[Int32]]) -> GpiodPreparedSetter {
        chip.calls.preparedSetter(handles, valueSets: valueSets)
    }

    // MARK: edge events

    /// gpiod_line_request_wait_edge_events over several requests on one chip: the indices (into `requests`)
    /// of those with an event pending, empty on timeout.
    public static func waitEdgeEvents(_ requests: [LineRequest], timeoutNanoseconds: UInt64) -> Result<[Int], Errno> {
        let live = requests.enumerated().filter { !$0.element.released }
        guard let calls = live.first?.element.chip.calls else { return .success([]) }
        let handles = live.flatMap(\.element.handles)
        return calls.waitEvents(handles, timeoutNanoseconds: timeoutNanoseconds).map { ready in
            live.filter { r in r.element.handles.contains { ready.contains($0) } }.map(\.offset)
        }
    }

    /// True when an edge event is pending on any line of this request (waiting at most `timeoutNanoseconds`).
    public func waitEdgeEvents(timeoutNanoseconds: UInt64) -> Result<Bool, Errno> {
        Self.waitEdgeEvents([self], timeoutNanoseconds: timeoutNanoseconds).map { !$0.isEmpty }
    }

    /// gpiod_line_request_read_edge_events: one pending event of line `index` (call after a wait said so).
    public func readEdgeEvent(_ index: Int = 0) -> Result<GpiodEdgeEvent, Errno> {
        guard !released, handles.indices.contains(index) else { return .failure(.noDevice) }
        return chip.calls.readEvent(handles[index])
    }

    // MARK: release

    /// gpiod_line_request_release: outputs are driven inactive first, then every line is released.
    /// Idempotent. Returns the error of driving the outputs inactive, if any (released regardless).
    @discardableResult
    public func release() -> Errno? {
        guard !released else { return nil }
        var failure: Errno?
        if case .output = config.direction,
           case .failure(let e) = chip.calls.setValues(handles, Array(repeating: 0, count: handles.count)) {
            failure = e
        }
        chip.calls.release(handles)
        released = true
        return failure
    }

    deinit { release() }
}

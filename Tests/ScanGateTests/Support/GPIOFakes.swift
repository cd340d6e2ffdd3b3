// Test doubles for the GPIO tests (no test cases here): a fake of the libgpiod calls that models
// chips, line names, consumers, active-low and physical levels; a manually advanced clock; and a
// line driver that records (time, role, level).
#if canImport(Glibc)
import Glibc
#endif
import Core
import GPIO
import Platform
import Settings

/// A fake of the gpiod calls seam. Models what the tests check: chips found by path/name/label, lines
/// by offset/name, requests with consumer, flags and initial value, EBUSY for lines held elsewhere,
/// physical levels (logical value inverted for active-low), release on chip close, chips that vanish.
final class FakeGpiod: GpiodCalls {
    struct Chip {
        var path: String
        var name: String
        var label: String
        /// Line names by offset (nil: unnamed).
        var lineNames: [String?]
        var openError: Errno? = nil
        var present = true
    }

    struct Request: Equatable {
        var chip: String
        var offset: Int
        var consumer: String
        var activeLow: Bool
        var initialValue: Int32
    }

    struct LineKey: Hashable { var chip: Int; var offset: Int }

    struct LineState {
        /// Consumer holding the line ("scangate" for us, another name for someone else).
        var consumer: String?
        var activeLow = false
        var requestedBy: UInt?
        var value: Int32 = 0
        /// Physical level, as a meter on the pin would read it.
        var physical: Int32 = 0
    }

    struct State {
        var chips: [Chip]
        var lines: [LineKey: LineState] = [:]
        var handles: [UInt: Int] = [:]   // chip handle -> chip index
        var nextHandle: UInt = 1
        var requests: [Request] = []
        var sets: [(chip: String, offset: Int, value: Int32)] = []
        var opens: [String] = []
        var closes = 0
        var releases: [(chip: String, offset: Int)] = []
    }

    let state: PosixMutex<State>

    init(chips: [Chip]) { state = PosixMutex(State(chips: chips)) }

    /// A Pi 5 style header chip (54 lines GPIO0…GPIO53) plus a small second chip.
    static func pi5() -> FakeGpiod {
        FakeGpiod(chips: [
            Chip(path: "/dev/gpiochip0", name: "gpiochip0", label: "pinctrl-rp1",
                 lineNames: (0..<54).map { "GPIO\($0)" }),
            Chip(path: "/dev/gpiochip1", name: "gpiochip1", label: "rp1-aux", lineNames: [nil, nil, nil, nil]),
        ])
    }

    // MARK: test controls

    /// Another program holds the line.
    func hold(chip: String, offset: Int, consumer: String) {
        state.withLock { s in
            let i = s.chips.firstIndex { $0.name == chip }!
            s.lines[LineKey(chip: i, offset: offset), default: LineState()].consumer = consumer
        }
    }

    func free(chip: String, offset: Int) {
        state.withLock { s in
            let i = s.chips.firstIndex { $0.name == chip }!
            s.lines[LineKey(chip: i, offset: offset)]?.consumer = nil
        }
    }

    /// The chip's driver goes away (open: ENOENT, set: ENODEV) or comes back.
    func setPresent(chip: String, _ present: Bool) {
        state.withLock { s in
            let i = s.chips.firstIndex { $0.name == chip }!
            s.chips[i].present = present
            if !present {
                for key in s.lines.keys where key.chip == i { s.lines[key] = nil }
            }
        }
    }

    func physical(chip: String = "gpiochip0", offset: Int) -> Int32 {
        state.withLock { s in
            let i = s.chips.firstIndex { $0.name == chip }!
            return s.lines[LineKey(chip: i, offset: offset)]?.physical ?? 0
        }
    }

    func consumer(chip: String = "gpiochip0", offset: Int) -> String? {
        state.withLock { s in
            let i = s.chips.firstIndex { $0.name == chip }!
            return s.lines[LineKey(chip: i, offset: offset)]?.consumer
        }
    }

    var requests: [Request] { state.withLock { $0.requests } }
    var openChipHandles: Int { state.withLock { $0.handles.count } }
    var sets: [(chip: String, offset: Int, value: Int32)] { state.withLock { $0.sets } }
    var opens: [String] { state.withLock { $0.opens } }

    // MARK: GpiodCalls

    func chipPaths() -> [String] { state.withLock { s in s.chips.filter(\.present).map(\.path) } }

    private func open(_ s: inout State, where match: (Chip) -> Bool, how: String) -> Result<GpiodChipHandle, Errno> {
        s.opens.append(how)
        guard let i = s.chips.firstIndex(where: { $0.present && match($0) }) else { return .failure(.noSuchFile) }
        if let e = s.chips[i].openError { return .failure(e) }
        let h = s.nextHandle
        s.nextHandle += 1
        s.handles[h] = i
        return .success(GpiodChipHandle(address: h))
    }

    func openChip(path: String) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in open(&s, where: { $0.path == path }, how: "path:\(path)") }
    }

    func openChip(name: String) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in open(&s, where: { $0.name == name }, how: "name:\(name)") }
    }

    func openChip(label: String) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in open(&s, where: { $0.label == label }, how: "label:\(label)") }
    }

    func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in open(&s, where: { $0.name == "gpiochip\(lookup)" }, how: "lookup:\(lookup)") }
    }

    func closeChip(_ chip: GpiodChipHandle) {
        state.withLock { s in
            s.closes += 1
            s.handles[chip.address] = nil
            // gpiod_chip_close releases what is still requested through this handle.
            for (key, line) in s.lines where line.requestedBy == chip.address {
                s.lines[key]?.requestedBy = nil
                s.lines[key]?.consumer = nil
            }
        }
    }

    private func chipIndex(_ s: State, _ chip: GpiodChipHandle) -> Int? { s.handles[chip.address] }

    func chipName(_ chip: GpiodChipHandle) -> String {
        state.withLock { s in chipIndex(s, chip).map { s.chips[$0].name } ?? "" }
    }

    func chipLabel(_ chip: GpiodChipHandle) -> String {
        state.withLock { s in chipIndex(s, chip).map { s.chips[$0].label } ?? "" }
    }

    func numLines(_ chip: GpiodChipHandle) -> Int {
        state.withLock { s in chipIndex(s, chip).map { s.chips[$0].lineNames.count } ?? 0 }
    }

    /// Line handle: chip handle * 10000 + offset + 1.
    private func lineHandle(_ chip: GpiodChipHandle, _ offset: Int) -> GpiodLineHandle {
        GpiodLineHandle(address: chip.address * 10000 + UInt(offset) + 1)
    }

    private func decode(_ s: State, _ line: GpiodLineHandle) -> (handle: UInt, key: LineKey)? {
        let h = (line.address - 1) / 10000, offset = Int((line.address - 1) % 10000)
        guard let i = s.handles[h] else { return nil }
        return (h, LineKey(chip: i, offset: offset))
    }

    func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard let i = chipIndex(s, chip), offset >= 0, offset < s.chips[i].lineNames.count else {
                return .failure(.invalidArgument)
            }
            return .success(lineHandle(chip, offset))
        }
    }

    func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard let i = chipIndex(s, chip) else { return .failure(.invalidArgument) }
            guard let offset = s.chips[i].lineNames.firstIndex(where: { $0 == name }) else {
                return .failure(.noSuchFile)
            }
            return .success(lineHandle(chip, offset))
        }
    }

    func lineName(_ line: GpiodLineHandle) -> String? {
        state.withLock { s in
            guard let (_, key) = decode(s, line) else { return nil }
            return s.chips[key.chip].lineNames[key.offset]
        }
    }

    func lineConsumer(_ line: GpiodLineHandle) -> String? {
        state.withLock { s in decode(s, line).flatMap { s.lines[$0.key]?.consumer } }
    }

    func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32)
        -> Result<Void, Errno> {
        state.withLock { s in
            guard let (h, key) = decode(s, line) else { return .failure(.noDevice) }
            guard s.chips[key.chip].present else { return .failure(.noDevice) }
            if s.lines[key]?.consumer != nil { return .failure(.busy) }
            s.requests.append(Request(chip: s.chips[key.chip].name, offset: key.offset, consumer: consumer,
                                      activeLow: activeLow, initialValue: initialValue))
            let physical = activeLow ? (initialValue == 0 ? 1 : 0) : initialValue
            s.lines[key] = LineState(consumer: consumer, activeLow: activeLow, requestedBy: h, value: initialValue,
                                     physical: physical)
            return .success(())
        }
    }

    func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno> {
        state.withLock { s in
            guard let (h, key) = decode(s, line) else { return .failure(.invalidArgument) }
            guard s.chips[key.chip].present else { return .failure(.noDevice) }
            guard var l = s.lines[key], l.requestedBy == h else { return .failure(.permissionDenied) }
            l.value = value
            l.physical = l.activeLow ? (value == 0 ? 1 : 0) : value
            s.lines[key] = l
            s.sets.append((s.chips[key.chip].name, key.offset, value))
            return .success(())
        }
    }

    func release(_ line: GpiodLineHandle) {
        state.withLock { s in
            guard let (h, key) = decode(s, line), s.lines[key]?.requestedBy == h else { return }
            s.lines[key]?.requestedBy = nil
            s.lines[key]?.consumer = nil
            s.releases.append((s.chips[key.chip].name, key.offset))
        }
    }
}

/// A clock that moves only when the test says so. Starts at 1000 s so ms offsets are easy to read.
final class FakeClock: FeedbackClock {
    static let origin: UInt64 = 1_000_000_000_000
    private let nanos = PosixMutex<UInt64>(FakeClock.origin)

    func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: nanos.withLock { $0 }) }

    /// Milliseconds since the origin.
    var ms: Int { Int((nanos.withLock { $0 } - FakeClock.origin) / 1_000_000) }

    func set(_ instant: MonotonicInstant) { nanos.withLock { $0 = instant.nanoseconds } }

    func set(ms: Int) { nanos.withLock { $0 = FakeClock.origin + UInt64(ms) * 1_000_000 } }
}

/// A line driver recording (ms, role, level), with the time read from a clock.
final class RecordingLines: FeedbackLines, Sendable {
    struct Change: Equatable, CustomStringConvertible {
        var ms: Int
        var role: GPIORole
        var active: Bool
        init(_ ms: Int, _ role: GPIORole, _ active: Bool) { self.ms = ms; self.role = role; self.active = active }
        var description: String { "\(ms)ms \(role.rawValue)=\(active ? 1 : 0)" }
    }

    private let clock: FeedbackClock
    private let state = PosixMutex<(changes: [Change], closed: Int)>(([], 0))
    /// Blocks every `set` until opened (to prove the decode path never waits for the lines).
    let gate: PosixMutex<Bool>

    init(clock: FeedbackClock, blocked: Bool = false) {
        self.clock = clock
        self.gate = PosixMutex(blocked)
    }

    var changes: [Change] { state.withLock { $0.changes } }
    var closeCount: Int { state.withLock { $0.closed } }

    func set(_ role: GPIORole, active: Bool) {
        while gate.withLock({ $0 }) { sleepThread(milliseconds: 1) }
        let t = clock.now().nanoseconds
        let ms = t >= FakeClock.origin ? Int((t - FakeClock.origin) / 1_000_000) : Int(t / 1_000_000)
        state.withLock { $0.changes.append(Change(ms, role, active)) }
    }

    func service(at now: MonotonicInstant) -> MonotonicInstant? { nil }

    func close() { state.withLock { $0.closed += 1 } }
}


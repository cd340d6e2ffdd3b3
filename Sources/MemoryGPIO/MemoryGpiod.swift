import Core
import GPIO
import Platform

/// The one fake of the gpiod calls: GPIO chips in memory. Models what the drivers rely on: chips found by
/// path, name or label, lines by offset or name, requests with consumer, active-low and initial values,
/// EBUSY for a line held elsewhere, physical levels (the logical value inverted for active-low), release
/// on chip close, chips that vanish (ENODEV), and inputs whose level the caller drives, each change
/// queued as an edge event. Every set is recorded with its CLOCK_MONOTONIC time (stamped first thing in
/// the call, as the real call would start), so the bench measures ScanGate's own timing up to the gpiod
/// call on it, and unit tests see what the wire carried. Its own target so that the tests and the bench
/// (Tools) share it while the drivers and outputs cannot link it.
public final class MemoryGpiod: GpiodCalls {
    public struct Chip: Sendable {
        public var path: String
        public var name: String
        public var label: String
        /// Line names by offset (nil: unnamed).
        public var lineNames: [String?]
        /// Physical level of a line nobody drives (1: pulled up).
        public var idleLevel: Int32
        public var openError: Errno?
        public var present = true

        public init(path: String, name: String, label: String, lineNames: [String?], idleLevel: Int32 = 0,
                    openError: Errno? = nil) {
            self.path = path
            self.name = name
            self.label = label
            self.lineNames = lineNames
            self.idleLevel = idleLevel
            self.openError = openError
        }
    }

    /// One line requested, as asked.
    public struct Request: Equatable, Sendable {
        public var chip: String
        public var offset: Int
        public var consumer: String
        public var activeLow: Bool
        public var initialValue: Int32
        /// False: an input with edge events.
        public var output: Bool

        public init(chip: String, offset: Int, consumer: String, activeLow: Bool, initialValue: Int32, output: Bool = true) {
            self.chip = chip
            self.offset = offset
            self.consumer = consumer
            self.activeLow = activeLow
            self.initialValue = initialValue
            self.output = output
        }
    }

    /// One `setValues`: when, which lines, the logical values asked for and the physical levels left.
    public struct Change: Equatable, Sendable {
        public var atNanoseconds: UInt64
        public var chip: String
        public var offsets: [Int]
        public var values: [Int32]
        public var physical: [Int32]
        /// What `tagSets` returned at this set (0 without it).
        public var tag: Int
    }

    /// What happened on the chips, in order.
    public enum Event: Equatable, Sendable {
        /// Lines requested as outputs together, with their physical levels at the request.
        case requestOutputs(offsets: [Int], physical: [Int32], consumer: String)
        case set(offsets: [Int], physical: [Int32])
        case releaseOutputs(offsets: [Int])
        case requestInput(offset: Int, consumer: String)
        case releaseInput(offset: Int)
        case closeChip
    }

    public struct LineKey: Hashable, Sendable {
        public var chip: Int
        public var offset: Int
    }

    public struct LineState: Sendable {
        /// Who holds the line ("scangate" for us, another name for someone else).
        public var consumer: String?
        public var activeLow = false
        public var requestedBy: UInt?
        public var output = false
        public var events = false
        /// The logical value last set.
        public var value: Int32 = 0
        /// As a meter on the pin would read it: driven by us for an output, by the caller for an input.
        public var physical: Int32
        public var pending: [GpiodEdgeEvent] = []
    }

    public struct State: Sendable {
        public var chips: [Chip]
        public var lines: [LineKey: LineState] = [:]
        /// Open chip handle → chip index.
        public var handles: [UInt: Int] = [:]
        public var nextHandle: UInt = 1
        public var requests: [Request] = []
        public var changes: [Change] = []
        public var events: [Event] = []
        public var opens: [String] = []
        public var closes = 0
        /// The next sets fail with `failWith` once this count reaches 0.
        public var failSetsAfter: Int?
        public var failWith = Errno.ioError
        /// The set after this many more sets takes `delayMs` (the caller is held off the CPU in it).
        public var delayAfter: Int?
        public var delayMs: Double = 0
        /// Called (outside the lock) at every set; its value is recorded as the change's tag.
        public var tagSets: (@Sendable () -> Int)?
    }

    public let state: PosixMutex<State>

    public init(chips: [Chip]) {
        var s = State(chips: chips)
        s.changes.reserveCapacity(4096)
        state = PosixMutex(s)
    }

    /// One chip labelled `label` (default "memory", name gpiochip0) with lines GPIO0...GPIO(count-1).
    public static func single(label: String = MemoryGpiod.label, lines count: Int = 32, idleLevel: Int32 = 0) -> MemoryGpiod {
        MemoryGpiod(chips: [Chip(path: "/dev/gpiochip0", name: "gpiochip0", label: label,
                                 lineNames: (0..<count).map { "GPIO\($0)" }, idleLevel: idleLevel)])
    }

    /// The label of `single()`'s chip.
    public static let label = "memory"

    // MARK: controls

    private func index(_ s: State, _ chip: String?) -> Int? {
        guard let chip else { return s.chips.isEmpty ? nil : 0 }
        return s.chips.firstIndex { $0.name == chip || $0.label == chip }
    }

    /// Another program holds the line (chip: name or label; nil: the first chip).
    public func hold(chip: String? = nil, offset: Int, consumer: String) {
        state.withLock { s in
            guard let i = index(s, chip) else { return }
            s.lines[LineKey(chip: i, offset: offset), default: LineState(physical: s.chips[i].idleLevel)].consumer = consumer
        }
    }

    public func free(chip: String? = nil, offset: Int) {
        state.withLock { s in
            guard let i = index(s, chip) else { return }
            s.lines[LineKey(chip: i, offset: offset)]?.consumer = nil
        }
    }

    /// The chip's driver goes away (open: ENOENT, line calls: ENODEV; its lines are free again) or comes back.
    public func setPresent(chip: String? = nil, _ present: Bool) {
        state.withLock { s in
            guard let i = index(s, chip) else { return }
            s.chips[i].present = present
            if !present {
                for key in s.lines.keys where key.chip == i { s.lines[key] = nil }
            }
        }
    }

    /// Drives an input's physical level (the panel, a button); an edge event is queued when it changes
    /// on a line requested for events (the kernel reports the logical edge: active-low applied).
    public func drive(chip: String? = nil, offset: Int, physical: Int32) {
        let now = MonotonicInstant.now().nanoseconds
        state.withLock { s in
            guard let i = index(s, chip) else { return }
            let key = LineKey(chip: i, offset: offset)
            var line = s.lines[key, default: LineState(physical: s.chips[i].idleLevel)]
            if line.physical != physical {
                line.physical = physical
                if line.events {
                    let logical = line.activeLow ? 1 - physical : physical
                    line.pending.append(GpiodEdgeEvent(edge: logical == 1 ? .rising : .falling, timestampNanoseconds: now))
                }
            }
            s.lines[key] = line
        }
    }

    /// After `count` more sets, every set fails with `errno` (until `failSetsAfter` is cleared).
    public func failSets(after count: Int, with errno: Errno = .ioError) {
        state.withLock { s in
            s.failSetsAfter = count
            s.failWith = errno
        }
    }

    /// The set after `count` more sets hangs for `milliseconds` (a preempted caller).
    public func delaySet(after count: Int, milliseconds: Double) {
        state.withLock { s in
            s.delayAfter = count
            s.delayMs = milliseconds
        }
    }

    public func physical(chip: String? = nil, offset: Int) -> Int32 {
        state.withLock { s in
            guard let i = index(s, chip) else { return 0 }
            return s.lines[LineKey(chip: i, offset: offset)]?.physical ?? s.chips[i].idleLevel
        }
    }

    public func consumer(chip: String? = nil, offset: Int) -> String? {
        state.withLock { s in index(s, chip).flatMap { s.lines[LineKey(chip: $0, offset: offset)]?.consumer } }
    }

    public var requests: [Request] { state.withLock { $0.requests } }
    /// Every set, in order, with its time.
    public var changes: [Change] { state.withLock { $0.changes } }
    public var events: [Event] { state.withLock { $0.events } }
    public var opens: [String] { state.withLock { $0.opens } }
    public var openChipHandles: Int { state.withLock { $0.handles.count } }

    // MARK: GpiodCalls: chips

    public func chipPaths() -> [String] { state.withLock { s in s.chips.filter(\.present).map(\.path) } }

    private func open(how: String, _ match: @escaping (Chip) -> Bool) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in
            s.opens.append(how)
            guard let i = s.chips.firstIndex(where: { $0.present && match($0) }) else { return .failure(.noSuchFile) }
            if let e = s.chips[i].openError { return .failure(e) }
            let h = s.nextHandle
            s.nextHandle += 1
            s.handles[h] = i
            return .success(GpiodChipHandle(address: h))
        }
    }

    public func openChip(path: String) -> Result<GpiodChipHandle, Errno> { open(how: "path:\(path)") { $0.path == path } }
    public func openChip(name: String) -> Result<GpiodChipHandle, Errno> { open(how: "name:\(name)") { $0.name == name } }
    public func openChip(label: String) -> Result<GpiodChipHandle, Errno> { open(how: "label:\(label)") { $0.label == label } }
    public func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> {
        open(how: "lookup:\(lookup)") { $0.name == "gpiochip\(lookup)" }
    }

    public func closeChip(_ chip: GpiodChipHandle) {
        state.withLock { s in
            s.closes += 1
            s.handles[chip.address] = nil
            s.events.append(.closeChip)
            // gpiod_chip_close releases what is still requested through this handle.
            for (key, line) in s.lines where line.requestedBy == chip.address {
                s.lines[key]?.requestedBy = nil
                s.lines[key]?.consumer = nil
                s.lines[key]?.output = false
                s.lines[key]?.events = false
            }
        }
    }

    public func chipName(_ chip: GpiodChipHandle) -> String {
        state.withLock { s in s.handles[chip.address].map { s.chips[$0].name } ?? "" }
    }

    public func chipLabel(_ chip: GpiodChipHandle) -> String {
        state.withLock { s in s.handles[chip.address].map { s.chips[$0].label } ?? "" }
    }

    public func numLines(_ chip: GpiodChipHandle) -> Int {
        state.withLock { s in s.handles[chip.address].map { s.chips[$0].lineNames.count } ?? 0 }
    }

    // MARK: GpiodCalls: lines

    /// Line handle: chip handle * 10000 + offset + 1.
    private func lineHandle(_ chip: UInt, _ offset: Int) -> GpiodLineHandle {
        GpiodLineHandle(address: chip * 10000 + UInt(offset) + 1)
    }

    private func decode(_ s: State, _ line: GpiodLineHandle) -> (handle: UInt, key: LineKey)? {
        guard line.address > 0 else { return nil }
        let h = (line.address - 1) / 10000, offset = Int((line.address - 1) % 10000)
        guard let i = s.handles[h] else { return nil }
        return (h, LineKey(chip: i, offset: offset))
    }

    public func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard let i = s.handles[chip.address] else { return .failure(.invalidArgument) }
            guard s.chips[i].present else { return .failure(.noDevice) }
            guard offset >= 0, offset < s.chips[i].lineNames.count else { return .failure(.invalidArgument) }
            return .success(lineHandle(chip.address, offset))
        }
    }

    public func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard let i = s.handles[chip.address] else { return .failure(.invalidArgument) }
            guard s.chips[i].present else { return .failure(.noDevice) }
            guard let offset = s.chips[i].lineNames.firstIndex(where: { $0 == name }) else { return .failure(.noSuchFile) }
            return .success(lineHandle(chip.address, offset))
        }
    }

    public func lineName(_ line: GpiodLineHandle) -> String? {
        state.withLock { s in decode(s, line).flatMap { s.chips[$0.key.chip].lineNames[$0.key.offset] } }
    }

    public func lineConsumer(_ line: GpiodLineHandle) -> String? {
        state.withLock { s in decode(s, line).flatMap { s.lines[$0.key]?.consumer } }
    }

    private func level(_ value: Int32, activeLow: Bool) -> Int32 {
        activeLow ? (value == 0 ? 1 : 0) : (value == 0 ? 0 : 1)
    }

    public func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno> {
        state.withLock { s in
            let decoded = lines.compactMap { decode(s, $0) }
            guard decoded.count == lines.count, initialValues.count == lines.count else { return .failure(.invalidArgument) }
            guard decoded.allSatisfy({ s.chips[$0.key.chip].present }) else { return .failure(.noDevice) }
            if decoded.contains(where: { s.lines[$0.key]?.consumer != nil }) { return .failure(.busy) }
            var physical: [Int32] = []
            for ((h, key), v) in zip(decoded, initialValues) {
                let p = level(v, activeLow: activeLow)
                s.lines[key] = LineState(consumer: consumer, activeLow: activeLow, requestedBy: h, output: true, value: v,
                                         physical: p)
                s.requests.append(Request(chip: s.chips[key.chip].name, offset: key.offset, consumer: consumer,
                                          activeLow: activeLow, initialValue: v, output: true))
                physical.append(p)
            }
            s.events.append(.requestOutputs(offsets: decoded.map(\.key.offset), physical: physical, consumer: consumer))
            return .success(())
        }
    }

    public func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno> {
        state.withLock { s in
            guard let (h, key) = decode(s, line) else { return .failure(.invalidArgument) }
            guard s.chips[key.chip].present else { return .failure(.noDevice) }
            if s.lines[key]?.consumer != nil { return .failure(.busy) }
            var l = s.lines[key, default: LineState(physical: s.chips[key.chip].idleLevel)]
            l.consumer = consumer
            l.activeLow = activeLow
            l.requestedBy = h
            l.events = true
            l.output = false
            l.pending = []
            s.lines[key] = l
            s.requests.append(Request(chip: s.chips[key.chip].name, offset: key.offset, consumer: consumer,
                                      activeLow: activeLow, initialValue: 0, output: false))
            s.events.append(.requestInput(offset: key.offset, consumer: consumer))
            return .success(())
        }
    }

    public func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno> {
        let (delay, tagger): (Double, (@Sendable () -> Int)?) = state.withLock { s in
            var delay = 0.0
            if let n = s.delayAfter {
                if n > 0 { s.delayAfter = n - 1 } else { s.delayAfter = nil; delay = s.delayMs }
            }
            return (delay, s.tagSets)
        }
        if delay > 0 { sleepThread(milliseconds: delay) }
        let now = MonotonicInstant.now().nanoseconds
        // Outside the lock: the tag may take its owner's own lock.
        let tag = tagger?() ?? 0
        return state.withLock { s in
            let decoded = lines.compactMap { decode(s, $0) }
            guard decoded.count == lines.count, values.count == lines.count else { return .failure(.invalidArgument) }
            guard decoded.allSatisfy({ s.chips[$0.key.chip].present }) else { return .failure(.noDevice) }
            guard decoded.allSatisfy({ s.lines[$0.key]?.output == true && s.lines[$0.key]?.requestedBy == $0.handle }) else {
                return .failure(.permissionDenied)
            }
            if let n = s.failSetsAfter {
                if n <= 0 { return .failure(s.failWith) }
                s.failSetsAfter = n - 1
            }
            var physical: [Int32] = []
            for ((_, key), v) in zip(decoded, values) {
                let p = level(v, activeLow: s.lines[key]?.activeLow ?? false)
                s.lines[key]?.value = v
                s.lines[key]?.physical = p
                physical.append(p)
            }
            let offsets = decoded.map(\.key.offset)
            let chip = decoded.first.map { s.chips[$0.key.chip].name } ?? ""
            s.events.append(.set(offsets: offsets, physical: physical))
            s.changes.append(Change(atNanoseconds: now, chip: chip, offsets: offsets, values: values, physical: physical, tag: tag))
            return .success(())
        }
    }

    public func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno> {
        state.withLock { s in
            guard let (h, key) = decode(s, line) else { return .failure(.invalidArgument) }
            guard s.chips[key.chip].present else { return .failure(.noDevice) }
            guard let l = s.lines[key], l.requestedBy == h else { return .failure(.permissionDenied) }
            return .success(l.activeLow ? 1 - l.physical : l.physical)
        }
    }

    public func release(_ lines: [GpiodLineHandle]) {
        state.withLock { s in
            var outputs: [Int] = []
            for line in lines {
                guard let (h, key) = decode(s, line), let l = s.lines[key], l.requestedBy == h else { continue }
                if l.events { s.events.append(.releaseInput(offset: key.offset)) }
                if l.output { outputs.append(key.offset) }
                s.lines[key]?.requestedBy = nil
                s.lines[key]?.consumer = nil
                s.lines[key]?.output = false
                s.lines[key]?.events = false
                s.lines[key]?.pending = []
            }
            if !outputs.isEmpty { s.events.append(.releaseOutputs(offsets: outputs)) }
        }
    }

    public func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno> {
        let deadline = MonotonicInstant.now().nanoseconds + timeoutNanoseconds
        while true {
            let ready: Result<[GpiodLineHandle], Errno> = state.withLock { s in
                var out: [GpiodLineHandle] = []
                for line in lines {
                    guard let (_, key) = decode(s, line), s.chips[key.chip].present else { return .failure(.noDevice) }
                    if !(s.lines[key]?.pending.isEmpty ?? true) { out.append(line) }
                }
                return .success(out)
            }
            if case .success(let r) = ready, r.isEmpty, MonotonicInstant.now().nanoseconds < deadline {
                sleepThread(milliseconds: 0.5)
                continue
            }
            return ready
        }
    }

    public func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno> {
        state.withLock { s in
            guard let (_, key) = decode(s, line) else { return .failure(.invalidArgument) }
            guard s.chips[key.chip].present else { return .failure(.noDevice) }
            guard var l = s.lines[key], !l.pending.isEmpty else { return .failure(.wouldBlock) }
            let e = l.pending.removeFirst()
            s.lines[key] = l
            return .success(e)
        }
    }
}

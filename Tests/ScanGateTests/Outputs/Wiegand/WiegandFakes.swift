// Test doubles for the Wiegand tests (no test cases here): a fake of the bulk gpiod calls that models
// one chip with named lines, bulk output requests (one handle for D0/D1, set together), physical levels
// under active-low, consumers and EBUSY, a chip that vanishes, input lines with a physical level the
// test drives and the edge events that produces; and a feedback sink that records what it was asked.
#if canImport(Glibc)
import Glibc
#endif
import Core
import GPIO
import Platform
import Wiegand

final class WiegandFakeGpiod: GpiodBulkCalls {
    /// One thing that happened on the chip, in order.
    enum Log: Equatable {
        /// Lines requested as outputs together, with their physical levels at the request.
        case requestOutputs(offsets: [Int], physical: [Int32], consumer: String)
        /// Both levels after a set (physical, as a meter on the pins would read them).
        case set(offsets: [Int], physical: [Int32])
        case releaseOutputs(offsets: [Int])
        case requestInput(offset: Int, consumer: String)
        case releaseInput(offset: Int)
        case closeChip
    }

    struct Line {
        var consumer: String?
        var activeLow = false
        var output = false
        var events = false
        /// The physical level: driven by us for an output, by the test for an input.
        var physical: Int32 = 1
        var pending: [GpiodEdgeEvent] = []
    }

    struct State {
        var present = true
        var lineNames: [String?]
        var lines: [Int: Line] = [:]
        var openHandles = 0
        var log: [Log] = []
        /// Time of every set (CLOCK_MONOTONIC ns) with the physical levels it left.
        var sets: [(ns: UInt64, physical: [Int32])] = []
        /// For every set, the frames the transmitter had finished before it (see `countFrames(of:)`).
        var finishedBefore: [Int] = []
        /// Frames the output has finished (sent, cut or dropped); nil: not counted.
        var finishedFrames: (@Sendable () -> Int)?
        /// The next `setValues` calls fail with this errno once the count reaches 0.
        var failSetsAfter: Int?
        var failWith = Errno.ioError
        /// The set after this many more sets takes `delayMs` (the thread is held off the CPU in it).
        var delayAfter: Int?
        var delayMs: Double = 0
    }

    let state: PosixMutex<State>
    static let label = "scangate-sim"

    /// 32 lines, GPIO0...GPIO31 (line 31 unnamed).
    init() {
        var names: [String?] = (0..<32).map { "GPIO\($0)" }
        names[31] = nil
        state = PosixMutex(State(lineNames: names))
    }

    // MARK: test controls

    func hold(_ offset: Int, by consumer: String) { state.withLock { $0.lines[offset, default: Line()].consumer = consumer } }
    func free(_ offset: Int) { state.withLock { $0.lines[offset]?.consumer = nil } }

    /// The driver goes away (every call fails with ENODEV) or comes back (lines free again).
    func setPresent(_ present: Bool) {
        state.withLock { s in
            s.present = present
            if !present { s.lines.removeAll(); s.openHandles = 0 }
        }
    }

    /// After `count` more sets, every set fails with `errno` (until `failSetsAfter` is cleared).
    func failSets(after count: Int, with errno: Errno = .ioError) {
        state.withLock { s in
            s.failSetsAfter = count
            s.failWith = errno
        }
    }

    /// The set after `count` more sets hangs for `milliseconds` (a preempted transmitter).
    func delaySet(after count: Int, milliseconds: Double) {
        state.withLock { s in
            s.delayAfter = count
            s.delayMs = milliseconds
        }
    }

    /// The panel drives an input's physical level; an edge event is queued when it changes.
    func drive(_ offset: Int, physical: Int32) {
        state.withLock { s in
            var line = s.lines[offset, default: Line()]
            if line.physical != physical {
                line.physical = physical
                if line.events {
                    // The kernel reports the logical edge (active-low flag applied).
                    let logical = line.activeLow ? 1 - physical : physical
                    line.pending.append(GpiodEdgeEvent(edge: logical == 1 ? .rising : .falling,
                                                       timestampNanoseconds: WiegandFakeGpiod.now()))
                }
            }
            s.lines[offset] = line
        }
    }

    var log: [Log] { state.withLock { $0.log } }
    var sets: [(ns: UInt64, physical: [Int32])] { state.withLock { $0.sets } }
    var setCount: Int { state.withLock { $0.sets.count } }
    var openHandles: Int { state.withLock { $0.openHandles } }
    func consumer(_ offset: Int) -> String? { state.withLock { $0.lines[offset]?.consumer } }
    func physical(_ offset: Int) -> Int32 { state.withLock { $0.lines[offset]?.physical ?? 1 } }

    /// Counts `output`'s finished frames (sent, plus cut or dropped) at every set, so `frames()` splits
    /// the wire where the transmitter itself ended a frame, not at a gap in real time. The transmitter
    /// thread finishes a frame (and counts it) before it starts the next one's first pulse; only an offer
    /// refused while a frame is on the wire would count in the middle of one (no test here does that).
    func countFrames(of output: WiegandOutput) {
        state.withLock { s in
            s.finishedFrames = { [weak output] in output.map { Int($0.health.sent + $0.health.errors) } ?? 0 }
        }
    }

    /// The bits the wire carried, frame by frame: a low pulse (high when `activeHigh`) on the first
    /// offset is a 0, on the second a 1. Frames are split where the count of finished frames changed
    /// (`countFrames(of:)`, which must have been called before the first frame).
    func frames(activeHigh: Bool = false) -> [String] {
        let pulse: Int32 = activeHigh ? 1 : 0
        var frames: [String] = [], current = "", currentFrame: Int?
        var previous: [Int32] = [1 - pulse, 1 - pulse]
        let (sets, finishedBefore, counted) = state.withLock { ($0.sets, $0.finishedBefore, $0.finishedFrames != nil) }
        precondition(counted, "frames() needs countFrames(of:) before the first frame")
        for ((_, p), frame) in zip(sets, finishedBefore) {
            let started = (0..<2).first { p[$0] == pulse && previous[$0] != pulse }
            if let i = started {
                if let currentFrame, frame != currentFrame, !current.isEmpty {
                    frames.append(current)
                    current = ""
                }
                currentFrame = frame
                current += i == 0 ? "0" : "1"
            }
            previous = p
        }
        if !current.isEmpty { frames.append(current) }
        return frames
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    // MARK: GpiodCalls

    private let chip = GpiodChipHandle(address: 7)

    func chipPaths() -> [String] { state.withLock { $0.present ? ["/dev/gpiochip0"] : [] } }

    private func open(_ matches: Bool) -> Result<GpiodChipHandle, Errno> {
        state.withLock { s in
            guard s.present, matches else { return .failure(.noSuchFile) }
            s.openHandles += 1
            return .success(chip)
        }
    }

    func openChip(path: String) -> Result<GpiodChipHandle, Errno> { open(path == "/dev/gpiochip0") }
    func openChip(name: String) -> Result<GpiodChipHandle, Errno> { open(name == "gpiochip0") }
    func openChip(label: String) -> Result<GpiodChipHandle, Errno> { open(label == Self.label) }
    func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> { open(lookup == "0") }
    func closeChip(_ chip: GpiodChipHandle) {
        state.withLock { s in
            s.openHandles = max(0, s.openHandles - 1)
            s.log.append(.closeChip)
        }
    }
    func chipName(_ chip: GpiodChipHandle) -> String { "gpiochip0" }
    func chipLabel(_ chip: GpiodChipHandle) -> String { Self.label }
    func numLines(_ chip: GpiodChipHandle) -> Int { state.withLock { $0.lineNames.count } }

    private func handle(_ offset: Int) -> GpiodLineHandle { GpiodLineHandle(address: UInt(1000 + offset)) }
    private func offset(_ line: GpiodLineHandle) -> Int { Int(line.address) - 1000 }

    func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            return (0..<s.lineNames.count).contains(offset) ? .success(handle(offset)) : .failure(.invalidArgument)
        }
    }
    func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            guard let i = s.lineNames.firstIndex(where: { $0 == name }) else { return .failure(.noSuchFile) }
            return .success(handle(i))
        }
    }
    func lineName(_ line: GpiodLineHandle) -> String? {
        state.withLock { s in
            let o = offset(line)
            return (0..<s.lineNames.count).contains(o) ? s.lineNames[o] : nil
        }
    }
    func lineConsumer(_ line: GpiodLineHandle) -> String? { state.withLock { $0.lines[offset(line)]?.consumer } }
    func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32) -> Result<Void, Errno> {
        .failure(.invalidArgument)   // Wiegand must request D0/D1 together
    }
    func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno> {
        .failure(.invalidArgument)   // a line of a bulk request is never set alone (see GpiodBulkCalls)
    }
    func release(_ line: GpiodLineHandle) { release([line]) }

    // MARK: GpiodBulkCalls

    func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            let offsets = lines.map(offset)
            if offsets.contains(where: { s.lines[$0]?.consumer != nil }) { return .failure(.busy) }
            var physical: [Int32] = []
            for (o, v) in zip(offsets, initialValues) {
                let p: Int32 = activeLow ? (v == 0 ? 1 : 0) : (v == 0 ? 0 : 1)
                s.lines[o] = Line(consumer: consumer, activeLow: activeLow, output: true, physical: p)
                physical.append(p)
            }
            s.log.append(.requestOutputs(offsets: offsets, physical: physical, consumer: consumer))
            return .success(())
        }
    }

    func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno> {
        let delay: Double = state.withLock { s in
            guard let n = s.delayAfter else { return 0 }
            if n > 0 { s.delayAfter = n - 1; return 0 }
            s.delayAfter = nil
            return s.delayMs
        }
        if delay > 0 { sleepThread(milliseconds: delay) }
        let now = Self.now()
        // Outside the lock: the output's health takes the transmitter's own lock.
        let finished = state.withLock { $0.finishedFrames }?() ?? 0
        return state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            let offsets = lines.map(offset)
            guard offsets.allSatisfy({ s.lines[$0]?.output == true }) else { return .failure(.permissionDenied) }
            if let n = s.failSetsAfter {
                if n <= 0 { return .failure(s.failWith) }
                s.failSetsAfter = n - 1
            }
            var physical: [Int32] = []
            for (o, v) in zip(offsets, values) {
                let activeLow = s.lines[o]?.activeLow ?? false
                let p: Int32 = activeLow ? (v == 0 ? 1 : 0) : (v == 0 ? 0 : 1)
                s.lines[o]?.physical = p
                physical.append(p)
            }
            s.log.append(.set(offsets: offsets, physical: physical))
            s.sets.append((now, physical))
            s.finishedBefore.append(finished)
            return .success(())
        }
    }

    func release(_ lines: [GpiodLineHandle]) {
        state.withLock { s in
            let offsets = lines.map(offset)
            let outputs = offsets.filter { s.lines[$0]?.output == true }
            for o in offsets {
                if s.lines[o]?.events == true { s.log.append(.releaseInput(offset: o)) }
                s.lines[o]?.consumer = nil
                s.lines[o]?.output = false
                s.lines[o]?.events = false
            }
            if !outputs.isEmpty { s.log.append(.releaseOutputs(offsets: outputs)) }
        }
    }

    func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            let o = offset(line)
            if s.lines[o]?.consumer != nil { return .failure(.busy) }
            var l = s.lines[o, default: Line()]
            l.consumer = consumer
            l.activeLow = activeLow
            l.events = true
            l.pending = []
            s.lines[o] = l
            s.log.append(.requestInput(offset: o, consumer: consumer))
            return .success(())
        }
    }

    func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            guard let l = s.lines[offset(line)], l.consumer != nil else { return .failure(.permissionDenied) }
            return .success(l.activeLow ? 1 - l.physical : l.physical)
        }
    }

    func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno> {
        let deadline = Self.now() + timeoutNanoseconds
        while true {
            let ready: Result<[GpiodLineHandle], Errno> = state.withLock { s in
                guard s.present else { return .failure(.noDevice) }
                return .success(lines.filter { !(s.lines[offset($0)]?.pending.isEmpty ?? true) })
            }
            if case .success(let r) = ready, r.isEmpty, Self.now() < deadline {
                usleep(500)
                continue
            }
            return ready
        }
    }

    func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno> {
        state.withLock { s in
            guard s.present else { return .failure(.noDevice) }
            let o = offset(line)
            guard var l = s.lines[o], !l.pending.isEmpty else { return .failure(.wouldBlock) }
            let e = l.pending.removeFirst()
            s.lines[o] = l
            return .success(e)
        }
    }
}


// Test doubles for the Wiegand tests (no test cases here): their chip on the one gpiod fake
// (MemoryGpiod) and how they read the wire from it; and a feedback sink that records what it was asked.
#if canImport(Glibc)
import Glibc
#endif
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Wiegand

/// The Wiegand tests' chip on the one gpiod fake (`MemoryGpiod`), and what they read from it.
extension MemoryGpiod {
    static let wiegandLabel = "scangate-sim"

    /// One chip "scangate-sim" (gpiochip0) with 32 lines GPIO0...GPIO31 (line 31 unnamed), pulled up.
    static func wiegand() -> MemoryGpiod {
        var names: [String?] = (0..<32).map { "GPIO\($0)" }
        names[31] = nil
        return MemoryGpiod(chips: [Chip(path: "/dev/gpiochip0", name: "gpiochip0", label: wiegandLabel, lineNames: names,
                                        idleLevel: 1)])
    }

    func hold(_ offset: Int, by consumer: String) { hold(offset: offset, consumer: consumer) }
    func free(_ offset: Int) { free(offset: offset) }
    /// The panel drives an input's physical level; an edge event is queued when it changes.
    func drive(_ offset: Int, physical: Int32) { drive(offset: offset, physical: physical) }
    func consumer(_ offset: Int) -> String? { consumer(offset: offset) }
    func physical(_ offset: Int) -> Int32 { physical(offset: offset) }

    var log: [Event] { events }
    /// Time of every set (CLOCK_MONOTONIC ns) with the physical levels it left.
    var wireSets: [(ns: UInt64, physical: [Int32])] { changes.map { ($0.atNanoseconds, $0.physical) } }
    var setCount: Int { state.withLock { $0.changes.count } }
    var openHandles: Int { openChipHandles }

    /// Counts `output`'s finished frames (sent, plus cut or dropped) at every set, so `frames()` splits
    /// the wire where the transmitter itself ended a frame, not at a gap in real time. The transmitter
    /// thread finishes a frame (and counts it) before it starts the next one's first pulse; only an offer
    /// refused while a frame is on the wire would count in the middle of one (no test here does that).
    func countFrames(of output: WiegandOutput) {
        state.withLock { s in
            s.tagSets = { [weak output] in output.map { Int($0.health.sent + $0.health.errors) } ?? 0 }
        }
    }

    /// The bits the wire carried, frame by frame: a low pulse (high when `activeHigh`) on the first
    /// offset is a 0, on the second a 1. Frames are split where the count of finished frames changed
    /// (`countFrames(of:)`, which must have been called before the first frame).
    func frames(activeHigh: Bool = false) -> [String] {
        let pulse: Int32 = activeHigh ? 1 : 0
        var frames: [String] = [], current = "", currentFrame: Int?
        var previous: [Int32] = [1 - pulse, 1 - pulse]
        let (changes, counted) = state.withLock { ($0.changes, $0.tagSets != nil) }
        precondition(counted, "frames() needs countFrames(of:) before the first frame")
        for change in changes {
            let p = change.physical
            let started = (0..<2).first { p[$0] == pulse && previous[$0] != pulse }
            if let i = started {
                if let currentFrame, change.tag != currentFrame, !current.isEmpty {
                    frames.append(current)
                    current = ""
                }
                currentFrame = change.tag
                current += i == 0 ? "0" : "1"
            }
            previous = p
        }
        if !current.isEmpty { frames.append(current) }
        return frames
    }

    static func now() -> UInt64 { MonotonicInstant.now().nanoseconds }
}


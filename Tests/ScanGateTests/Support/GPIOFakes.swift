// Test doubles for the GPIO tests (no test cases here): the chips they use on the one gpiod fake
// (MemoryGpiod); a manually advanced clock; and a line driver that records (time, role, level).
#if canImport(Glibc)
import Glibc
#endif
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Settings

/// The GPIO tests' chips on the one gpiod fake (`MemoryGpiod`).
extension MemoryGpiod {
    /// A Pi 5 style header chip (54 lines GPIO0…GPIO53) plus a small second chip.
    static func pi5() -> MemoryGpiod {
        MemoryGpiod(chips: [
            Chip(path: "/dev/gpiochip0", name: "gpiochip0", label: "pinctrl-rp1",
                 lineNames: (0..<54).map { "GPIO\($0)" }),
            Chip(path: "/dev/gpiochip1", name: "gpiochip1", label: "rp1-aux", lineNames: [nil, nil, nil, nil]),
        ])
    }

    /// Every line set, one entry per line per set, in order.
    var sets: [(chip: String, offset: Int, value: Int32)] {
        changes.flatMap { c in zip(c.offsets, c.values).map { (c.chip, $0.0, $0.1) } }
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


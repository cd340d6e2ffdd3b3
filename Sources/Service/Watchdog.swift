import Core
import Platform
import Runtime
import Synchronization

/// The systemd watchdog (WatchdogSec=): sends WATCHDOG=1 every half interval, but only while the
/// capture→decode loop makes progress. The pipeline calls `progress()` after each frame the decode
/// queue finishes; when decoding hangs, the pings stop and systemd restarts the service.
/// While the camera is lost or scanning is paused there are no frames by design, so pings continue:
/// they depend on progress only in the `.scanning` state.
///
/// As a `StatusObserver` it follows the daemon's status; `close()` stops the timer thread.
public final class Watchdog: StatusObserver, @unchecked Sendable {
    public let name = "watchdog"
    /// systemd's interval; pings go out every half of it.
    public let intervalMicroseconds: UInt64
    private let notifier: ServiceNotifier
    private let logger: Logger
    private let frames = Atomic<UInt64>(0)
    private let tickCount = Atomic<UInt64>(0)
    private var timer: Worker<Never>?

    private struct State {
        var status: DaemonStatus = .starting
        var framesAtLastTick: UInt64 = 0
        var stalledTicks = 0
        var started = false
    }
    /// Signalled by `close()` to end the timer loop.
    private let state = PosixMutex(State())

    /// A running watchdog when systemd asked for one (WATCHDOG_USEC for this process), else nil.
    public static func make(notifier: ServiceNotifier, calls: any SystemdCalls = LibSystemd(),
                            logger: Logger) -> Watchdog? {
        switch calls.watchdogMicroseconds() {
        case .failure(let error):
            logger.warning("systemd watchdog: cannot read WATCHDOG_USEC: \(error); running without it")
            return nil
        case .success(nil):
            return nil
        case .success(let usec?):
            let watchdog = Watchdog(intervalMicroseconds: usec, notifier: notifier, logger: logger)
            watchdog.start()
            logger.info("systemd watchdog: \(Double(usec) / 1e6) s; pinging every \(Double(usec) / 2e6) s while frames are decoded")
            return watchdog
        }
    }

    /// A watchdog that ticks only when `tick()` is called (tests), until `start()`.
    public init(intervalMicroseconds: UInt64, notifier: ServiceNotifier, logger: Logger) {
        self.intervalMicroseconds = intervalMicroseconds
        self.notifier = notifier
        self.logger = logger
    }

    /// Starts the timer: one `tick()` every half interval, on the watchdog's own thread, until `close()`.
    /// Called once, before the watchdog is shared.
    public func start() {
        guard state.withLock({ s in
            defer { s.started = true }
            return !s.started
        }) else { return }
        let periodNanoseconds = Int(clamping: max(intervalMicroseconds / 2, 1000) * 1000)
        do {
            timer = try Worker<Never>(name: "scangate-watchdog", capacity: 1, overflow: .refuse) { [self] inbox in
                while !inbox.isStopping {
                    if !inbox.wait(nanoseconds: UInt64(periodNanoseconds)) { tick() }
                }
            }
        } catch {
            logger.error("systemd watchdog: cannot start its thread: \(error); no pings are sent, so systemd will restart the service")
        }
    }

    /// Called by the pipeline after each frame the decode queue has finished (decoded, or skipped as
    /// unchanged). Lock-free; never blocks.
    public func progress() {
        frames.wrappingAdd(1, ordering: .relaxed)
    }

    /// Ticks so far (tests wait on this instead of sleeping).
    public var ticks: UInt64 { tickCount.load(ordering: .acquiring) }

    /// One check: ping if frames were decoded since the last tick, or if no progress is expected.
    public func tick() {
        let now = frames.load(ordering: .relaxed)
        enum Outcome { case ping, pingAfterStall(Int), withhold(Int) }
        let outcome: Outcome = state.withLock { s in
            let advanced = now != s.framesAtLastTick
            s.framesAtLastTick = now
            if advanced || s.status != .scanning {
                let stalled = s.stalledTicks
                s.stalledTicks = 0
                return stalled > 0 ? .pingAfterStall(stalled) : .ping
            }
            s.stalledTicks += 1
            return .withhold(s.stalledTicks)
        }
        switch outcome {
        case .ping:
            notifier.watchdogPing()
        case .pingAfterStall(let ticks):
            notifier.watchdogPing()
            logger.info("decode loop progressing again after \(Double(ticks) * Double(intervalMicroseconds) / 2e6) s; watchdog pings resumed")
        case .withhold(let ticks):
            if ticks == 1 {
                logger.error("no frame decoded for \(Double(intervalMicroseconds) / 2e6) s while scanning: "
                             + "withholding watchdog pings (systemd restarts the service if this lasts)")
            }
        }
        tickCount.wrappingAdd(1, ordering: .releasing)
    }

    // MARK: StatusObserver

    public func statusChanged(_ status: DaemonStatus) {
        state.withLock { $0.status = status }
    }

    public func close() {
        let running = state.withLock { s in
            defer { s.started = false }
            return s.started
        }
        if running {
            timer?.stop(deadline: .now().adding(milliseconds: 1000))
            timer = nil
        }
    }
}

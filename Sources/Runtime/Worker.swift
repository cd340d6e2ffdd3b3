import Core
import Dispatch
import Platform
import Synchronization

/// What a full mailbox does with one more message.
public enum MailboxOverflow: Equatable, Sendable {
    /// Drops the oldest waiting message for the new one, and counts it (LED commands, stdout lines:
    /// the newest matters most).
    case dropOldest
    /// Refuses the new message, and counts it (a door frame: the caller says "queue full").
    case refuse
}

/// What `Worker.post` did with a message.
public enum WorkerPost: Equatable, Sendable {
    /// In the mailbox.
    case queued
    /// In the mailbox; the oldest waiting message was dropped for it (counted in `dropped`).
    case queuedDroppingOldest
    /// The mailbox was full and refuses (counted in `dropped`).
    case full
    /// The worker is stopping: no new work.
    case stopping

    public var isQueued: Bool { self == .queued || self == .queuedDroppingOldest }
}

/// One thread of a device (an output, a feedback device): a name, a bounded mailbox the callers post to
/// without ever waiting, and one way to stop.
///
/// - `post` never blocks: a full mailbox drops its oldest message or refuses the new one, as the device
///   chose (`MailboxOverflow`), and counts it.
/// - The body runs on the thread and takes its work from a `WorkerInbox`: one message at a time
///   (`next`), all at once (`takeAll`), or it only waits for news (`wait`) and reads its own state.
/// - `drain(deadline:)` waits until the mailbox is empty and the body idle, bounded.
/// - `stop(deadline:)` takes no new work, lets the body finish what is in hand until `deadline`, then
///   gives up on it (the thread is detached and ends when its blocking call does). Either way it calls
///   the device's `forceInactive` hook, so every line is inactive when it returns: relay off, LEDs
///   off, lines released. The hook must be safe from any thread, bounded, and harmless after the body
///   has closed the device.
/// - A body that waits on descriptors of its own (a port, a socket) asks for a pollable wake-up
///   (`pollable: true`): post, wake and stop then also signal a pipe the body polls together with its
///   descriptors (`WorkerInbox.poll(_:until:)`). A device whose state is shared by two workers, each
///   woken by the other, makes the pipes first and hands each worker its own (`wakePipe:`).
public final class Worker<Message: Sendable>: Sendable {
    public let name: String
    public let capacity: Int
    public let overflow: MailboxOverflow
    private let inbox: WorkerInbox<Message>
    private let thread: PosixThread
    private let forceInactiveHook: @Sendable () -> Void
    private let logger: Logger?

    /// Starts the thread `name` running `body`.
    /// - Parameters:
    ///   - capacity: messages that may wait (at least 1).
    ///   - forceInactive: drives the device's outputs idle; called by every `stop` and by `forceInactive()`.
    ///   - logger: where a worker that misses its stop deadline is reported (nil: not reported).
    ///   - pollable: the body waits in poll(2) on descriptors of its own, with `WorkerInbox.poll`.
    ///   - wakePipe: the pipe that wakes the body, made by the caller (who also signals it); implies pollable.
    public init(name: String, capacity: Int, overflow: MailboxOverflow, logger: Logger? = nil, pollable: Bool = false,
                wakePipe: WakePipe? = nil, forceInactive: @escaping @Sendable () -> Void = {},
                body: @escaping @Sendable (WorkerInbox<Message>) -> Void) throws(SystemError) {
        self.name = name
        self.capacity = max(1, capacity)
        self.overflow = overflow
        self.logger = logger
        self.forceInactiveHook = forceInactive
        var pipe = wakePipe
        if pipe == nil && pollable { pipe = try WakePipe(purpose: name) }
        let inbox = WorkerInbox<Message>(capacity: max(1, capacity), overflow: overflow, wakePipe: pipe)
        self.inbox = inbox
        thread = try PosixThread(name: name) {
            body(inbox)
            inbox.finish()
        }
    }

    deinit {
        // An owner that never stopped it: stop now, briefly, rather than leave the thread waiting for ever.
        if !inbox.isFinished { _ = stop(deadline: .now().adding(milliseconds: 1000)) }
    }

    /// Hands `message` to the thread; never blocks.
    @discardableResult
    public func post(_ message: Message) -> WorkerPost { inbox.post(message) }

    /// Wakes the body without a message (it reads its own state: a newer status, a pulse request).
    /// False when stopping.
    @discardableResult
    public func wake() -> Bool { inbox.poke() }

    /// Messages dropped or refused because the mailbox was full.
    public var dropped: UInt64 { inbox.dropped }

    /// Messages waiting now.
    public var waiting: Int { inbox.waiting }

    /// True once `stop` was called.
    public var isStopping: Bool { inbox.isStopping }

    /// Waits until the mailbox is empty and the body idle (waiting for work, not busy), or `deadline`.
    /// True when idle; true at once when stopping or stopped (nothing more will run).
    public func drain(deadline: MonotonicInstant) -> Bool { inbox.waitIdle(deadline: deadline) }

    /// Stops taking new work, lets the body finish what is in hand until `deadline`, then gives up on
    /// it; calls the `forceInactive` hook on every path. True when the thread finished in time. Calling
    /// it again waits for the same thread, bounded by the new deadline.
    /// - Parameter waitingUntil: how long to wait for the thread when it is later than `deadline` (the
    ///   body's own deadline, `stopDeadline`): the time a body needs to wind up after it (close a port).
    @discardableResult
    public func stop(deadline: MonotonicInstant, waitingUntil: MonotonicInstant? = nil) -> Bool {
        inbox.requestStop(deadline: deadline)
        let finished = inbox.waitFinished(deadline: max(deadline, waitingUntil ?? deadline))
        if finished {
            thread.join()
        } else {
            logger?.error("\(name): did not stop within its deadline (a call is stuck); driving its outputs inactive and leaving it")
            thread.detach()
        }
        forceInactiveHook()
        return finished
    }

    /// Drives the device's outputs idle now, from any thread (the shutdown deadline), without waiting
    /// for the worker.
    public func forceInactive() { forceInactiveHook() }
}

/// The body's side of a worker's mailbox. Only the worker's thread calls the taking and waiting methods.
public final class WorkerInbox<Message: Sendable>: Sendable {
    /// What `next` found.
    public enum Next {
        case message(Message)
        /// The wait's deadline passed with nothing posted.
        case timedOut
        /// Stopping, and the mailbox is empty.
        case stopped
    }

    private struct State {
        var queue: [Message] = []
        var head = 0
        var stopping = false
        var finished = false
        var busy = false
        var waitingForWork = false
        var dropped: UInt64 = 0
        var idleWaiters: [DispatchSemaphore] = []
        var count: Int { queue.count - head }

        /// Gives back the room of messages already taken or dropped.
        mutating func compact() {
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }
    }

    private let capacity: Int
    private let overflow: MailboxOverflow
    private let state = PosixMutex(State())
    private let wakeSignal = DispatchSemaphore(value: 0)
    /// The wake-up of a pollable worker (instead of `wakeSignal`).
    private let wakePipe: WakePipe?
    private let finishedSignal = DispatchSemaphore(value: 0)
    private let stopFlag = Atomic<Bool>(false)
    /// The stop deadline (CLOCK_MONOTONIC ns), readable without a lock (a Wiegand bit boundary); 0: none.
    private let deadlineNanoseconds = Atomic<UInt64>(0)

    init(capacity: Int, overflow: MailboxOverflow, wakePipe: WakePipe? = nil) {
        self.capacity = capacity
        self.overflow = overflow
        self.wakePipe = wakePipe
    }

    private func signalWake() {
        if let wakePipe { wakePipe.signal() } else { wakeSignal.signal() }
    }

    // MARK: callers' side (through Worker)

    func post(_ message: Message) -> WorkerPost {
        let result = state.withLock { s -> WorkerPost in
            guard !s.stopping else { return .stopping }
            var result = WorkerPost.queued
            if s.count >= capacity {
                s.dropped += 1
                guard overflow == .dropOldest else { return .full }
                s.head += 1
                s.compact()
                result = .queuedDroppingOldest
            }
            s.queue.append(message)
            s.waitingForWork = false
            return result
        }
        if result.isQueued { signalWake() }
        return result
    }

    func poke() -> Bool {
        let stopping = state.withLock { s -> Bool in
            if !s.stopping { s.waitingForWork = false }
            return s.stopping
        }
        signalWake()
        return !stopping
    }

    var dropped: UInt64 { state.withLock { $0.dropped } }
    var waiting: Int { state.withLock { $0.count } }
    var isFinished: Bool { state.withLock { $0.finished } }

    func requestStop(deadline: MonotonicInstant) {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            if !s.stopping { deadlineNanoseconds.store(max(1, deadline.nanoseconds), ordering: .releasing) }
            s.stopping = true
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        stopFlag.store(true, ordering: .releasing)
        for w in waiters { w.signal() }
        signalWake()
    }

    func waitFinished(deadline: MonotonicInstant) -> Bool {
        if state.withLock({ $0.finished }) { return true }
        guard finishedSignal.wait(timeout: Self.dispatchTime(deadline)) == .success else { return false }
        finishedSignal.signal()   // for a later stop call
        return true
    }

    func waitIdle(deadline: MonotonicInstant) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let idle = state.withLock { s -> Bool in
            if s.stopping || s.finished || (s.count == 0 && !s.busy && s.waitingForWork) { return true }
            s.idleWaiters.append(waiter)
            return false
        }
        if idle { return true }
        return waiter.wait(timeout: Self.dispatchTime(deadline)) == .success
    }

    func finish() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            s.finished = true
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
        finishedSignal.signal()
    }

    // MARK: the body's side

    /// True once the worker is asked to stop (no lock: cheap enough for every loop turn).
    public var isStopping: Bool { stopFlag.load(ordering: .acquiring) }

    /// The stop deadline, once stopping.
    public var stopDeadline: MonotonicInstant? {
        let ns = deadlineNanoseconds.load(ordering: .acquiring)
        return ns == 0 ? nil : MonotonicInstant(nanoseconds: ns)
    }

    /// True when a message waits or a stop was asked for (a body in the middle of a long play stops it).
    public var hasNews: Bool { state.withLock { $0.stopping || $0.count > 0 } }

    /// Marks the body busy after the mailbox is empty (a pattern still playing): `drain` waits for it.
    public func setBusy(_ busy: Bool) { state.withLock { $0.busy = busy } }

    /// The next message, in order; what is in the mailbox is still handed out after a stop (the body
    /// finishes what is in hand, or checks `isStopping` and quits at once). Waits until `deadline`
    /// (nil: until something is posted or a stop).
    public func next(until deadline: MonotonicInstant? = nil) -> Next {
        while true {
            if let m = take() { return .message(m) }
            if isStopping { return .stopped }
            if !wait(until: deadline) { return take().map { .message($0) } ?? .timedOut }
        }
    }

    /// Everything waiting, oldest first.
    public func takeAll() -> [Message] {
        state.withLock { s in
            let all = Array(s.queue[s.head...])
            s.queue.removeAll(keepingCapacity: true)
            s.head = 0
            return all
        }
    }

    /// Blocks until something is posted, `wake` or `stop` is called, or `deadline` (nil: no deadline).
    /// False when the deadline passed. Says the body is idle to `drain` when the mailbox is empty and
    /// the body is not busy.
    @discardableResult
    public func wait(until deadline: MonotonicInstant?) -> Bool {
        wait(nanoseconds: deadline.map { d in
            let now = MonotonicInstant.now()
            return d > now ? d.nanoseconds - now.nanoseconds : 0
        })
    }

    /// As `wait(until:)`, for at most `nanoseconds` (nil: no bound); for bodies on a clock of their own.
    @discardableResult
    public func wait(nanoseconds: UInt64?) -> Bool {
        markIdle()
        if let wakePipe {
            let ms = nanoseconds.map { Int32(min(($0 + 999_999) / 1_000_000, UInt64(Int32.max))) } ?? -1
            return wakePipe.wait(milliseconds: ms)
        }
        guard let nanoseconds else {
            wakeSignal.wait()
            return true
        }
        return wakeSignal.wait(timeout: .now() + .nanoseconds(Int(min(nanoseconds, UInt64(Int.max))))) == .success
    }

    /// The wake-up descriptor of a pollable worker (readable when there is news), for a body that builds
    /// its own poll set; nil for a worker started without `pollable`.
    public var wakeDescriptor: Int32? { wakePipe?.readFD }

    /// Waits in one poll(2) until something is posted, `wake` or `stop` is called, one of `descriptors`
    /// has its events, or `deadline` (nil: no deadline); EINTR is resumed. Says the body is idle to
    /// `drain` like `wait`. Only for a worker started with `pollable: true` (otherwise it throws EINVAL).
    public func poll(_ descriptors: [PollRequest], until deadline: MonotonicInstant?) throws(SystemError) -> PollOutcome {
        guard let wakePipe else { throw SystemError("poll", "worker without a pollable wake-up", .invalidArgument) }
        markIdle()
        return try wakePipe.pollDescriptors(descriptors, until: deadline)
    }

    /// Says the body is idle to `drain` when the mailbox is empty and the body is not busy.
    private func markIdle() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            guard s.count == 0, !s.busy, !s.stopping else { return [] }
            s.waitingForWork = true
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
    }

    /// The next message if one waits; never waits.
    public func take() -> Message? {
        state.withLock { s -> Message? in
            guard s.count > 0 else { return nil }
            let m = s.queue[s.head]
            s.head += 1
            s.compact()
            s.waitingForWork = false
            return m
        }
    }

    private static func dispatchTime(_ deadline: MonotonicInstant) -> DispatchTime {
        let ms = max(0, deadline.milliseconds(since: .now()))
        return .now() + .microseconds(Int((ms * 1000).rounded(.up)))
    }
}

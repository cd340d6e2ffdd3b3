import Core
import Platform

/// Something the daemon starts once and stops once, in the spirit of swift-service-lifecycle's
/// `Service`: an output set, the feedback hub, the status socket. Devices with a thread stop through
/// their `Worker`.
public protocol Service: AnyObject, Sendable {
    /// For the log: "outputs", "feedback", "status socket".
    var serviceName: String { get }
    /// Starts it; a throw stops the services already started (in reverse order) and ends the start.
    func start() throws
    /// Finishes what is in hand until `deadline` and releases what it holds; returns by `deadline` even
    /// when a call inside is stuck (with its lines driven inactive).
    func stop(deadline: MonotonicInstant)
    /// Drives every line it holds inactive now, from any thread, without waiting. Bounded.
    func forceInactive()
}

extension Service {
    public func start() throws {}
    public func forceInactive() {}
}

/// Services started in order and stopped in reverse order with one deadline, as swift-service-lifecycle's
/// `ServiceGroup` does. A service that returns after the deadline is logged and driven inactive.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let logger: Logger
    private let started = PosixMutex<Int>(0)

    /// `services` in start order.
    public init(_ services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    /// Starts each service in order. When one throws, those already started are stopped (reverse
    /// order, by `stopDeadline`) and the error is rethrown.
    public func start(stopDeadlineOnFailure milliseconds: Double = 2000) throws {
        for (i, service) in services.enumerated() {
            do {
                try service.start()
                started.withLock { $0 = i + 1 }
            } catch {
                stop(deadline: MonotonicInstant.now().adding(milliseconds: milliseconds))
                throw error
            }
        }
    }

    /// Stops the started services in reverse order, all by `deadline`. Names the ones that missed it
    /// (they are driven inactive). True when every one stopped in time.
    @discardableResult
    public func stop(deadline: MonotonicInstant) -> Bool {
        let count = started.withLock { n -> Int in defer { n = 0 }; return n }
        var late: [String] = []
        for service in services.prefix(count).reversed() {
            service.stop(deadline: deadline)
            if MonotonicInstant.now() > deadline {
                late.append(service.serviceName)
                service.forceInactive()
            }
        }
        if !late.isEmpty {
            logger.error("shutdown: \(late.joined(separator: ", ")) did not stop by the deadline; driven inactive")
        }
        return late.isEmpty
    }

    /// Drives every service's lines inactive now (the shutdown deadline ran out).
    public func forceInactive() {
        for service in services { service.forceInactive() }
    }
}

/// A service made of closures: for a step whose owner is not a service itself (an output set, the
/// feedback hub, the journal).
public final class AnyService: Service {
    public let serviceName: String
    private let startBody: @Sendable () throws -> Void
    private let stopBody: @Sendable (MonotonicInstant) -> Void
    private let forceInactiveBody: @Sendable () -> Void

    public init(_ name: String, start: @escaping @Sendable () throws -> Void = {},
                stop: @escaping @Sendable (MonotonicInstant) -> Void,
                forceInactive: @escaping @Sendable () -> Void = {}) {
        serviceName = name
        startBody = start
        stopBody = stop
        forceInactiveBody = forceInactive
    }

    public func start() throws { try startBody() }
    public func stop(deadline: MonotonicInstant) { stopBody(deadline) }
    public func forceInactive() { forceInactiveBody() }
}

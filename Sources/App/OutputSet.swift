import Components
import Core
import Platform
import Settings

/// The outputs the daemon owns: built once from the settings, held for the daemon's whole run, and
/// closed once at exit. A reload rebuilds an output only when its own settings changed; the others keep
/// their ports, sessions and line requests.
final class OutputSet: StatusObserver, @unchecked Sendable {
    private struct Running {
        let component: Component
        let output: any Output
    }

    private let components: [(component: Component, factory: OutputFactory)]
    private let context: OutputContext
    private let logger: Logger
    private let running = PosixMutex<[Running]>([])
    private let status = PosixMutex<DaemonStatus?>(nil)

    init(components: [Component], context: OutputContext) {
        self.components = components.compactMap { c in
            if case .output(let factory) = c.role { return (c, factory) }
            return nil
        }
        self.context = context
        self.logger = context.logger
    }

    /// Builds every configured output. Throws for settings an output refuses (nothing is left open then).
    func start(_ settings: RunSettings) throws {
        var built: [Running] = []
        do {
            for (component, factory) in components where factory.isConfigured(settings) {
                built.append(Running(component: component, output: try factory.make(settings, context)))
            }
        } catch {
            let deadline = MonotonicInstant.now().adding(milliseconds: 1000)
            for r in built { r.output.close(deadline: deadline) }
            throw error
        }
        running.withLock { $0 = built }
        tellStatus(built.map(\.output))
    }

    /// Moves from `old` to `new`: outputs whose settings are unchanged stay as they are; changed ones are
    /// closed and built again; ones no longer configured are closed; new ones are built. `new` has been
    /// validated. An output that cannot be built is logged and left off.
    func reconfigure(from old: RunSettings, to new: RunSettings, closeWithin milliseconds: Double = 2000) {
        var current = running.withLock { $0 }
        var next: [Running] = []
        for (component, factory) in components {
            let existing = current.firstIndex { $0.component.name == component.name }.map { current.remove(at: $0) }
            let wanted = factory.isConfigured(new)
            if let existing, wanted, factory.sameSettings(old, new) {
                next.append(existing)
                continue
            }
            if let existing {
                logger.notice(wanted ? "\(component.name): settings changed; reopening"
                                     : "\(component.name): no longer configured; closing")
                existing.output.close(deadline: .now().adding(milliseconds: milliseconds))
                if let link = context.links as? StatusBoard { link.removeLink(component.name) }
            }
            guard wanted else { continue }
            do {
                let output = try factory.make(new, context)
                next.append(Running(component: component, output: output))
                tellStatus([output])
                if existing == nil { logger.notice("\(component.name): configured; opening") }
            } catch {
                logger.error("\(component.name): \(error); it stays off until the next reload")
            }
        }
        running.withLock { $0 = next }
    }

    var outputs: [any Output] { running.withLock { $0.map(\.output) } }
    var doors: [any DoorOutput] { outputs.compactMap { $0 as? DoorOutput } }
    var reports: [any ReportOutput] { outputs.compactMap { $0 as? ReportOutput } }

    /// Forwards the daemon's status to the outputs that follow it (MQTT state).
    func statusChanged(_ status: DaemonStatus) {
        self.status.withLock { $0 = status }
        for case let observer as StatusObserver in outputs { observer.statusChanged(status) }
    }

    private func tellStatus(_ outputs: [any Output]) {
        guard let status = status.withLock({ $0 }) else { return }
        for case let observer as StatusObserver in outputs { observer.statusChanged(status) }
    }

    /// Drives every line an output holds inactive at once (shutdown out of time).
    func forceInactive() {
        for case let holder as LineHolder in outputs { holder.forceInactive() }
    }

    /// Closes every output by `deadline`, side by side: shutdown takes as long as the slowest output's
    /// bound, not their sum.
    func close(deadline: MonotonicInstant) {
        let all = running.withLock { r -> [any Output] in
            defer { r.removeAll() }
            return r.map(\.output)
        }
        let threads = all.map { output in
            try? PosixThread(name: "scangate-close") { output.close(deadline: deadline) }
        }
        for (i, t) in threads.enumerated() {
            if let t { t.join() } else { all[i].close(deadline: deadline) }
        }
    }
}

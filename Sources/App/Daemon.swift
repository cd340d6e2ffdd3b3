#if canImport(Glibc)
import Glibc
#endif
import Catalog
import Components
import Config
import Core
import Credentials
import Debounce
import Decoding
import Feedback
import MQTT
import Pipeline
import Platform
import Runtime
import Service
import Settings
import Synchronization

/// One daemon run. It owns everything that lives as long as the process: the outputs, the feedback hub
/// and its devices, the status board, systemd's notifier and watchdog, the signal thread. The pipeline
/// (capture thread and decode queue) is rebuilt on SIGHUP over the same outputs; the camera stays open
/// when its settings did not change, and each output is rebuilt only when its own settings did.
final class Daemon: @unchecked Sendable {
    private let configPath: String?
    private let flags: [(OptionSpec, String)]
    private var settings: RunSettings
    private let seams: DeviceSeams
    private let logger: Logger

    private struct Control {
        var pipeline: Pipeline?
        var paused = false
        var reloadRequested = false
        var terminating = false
    }
    private let control = PosixMutex(Control())
    /// `stop-timeout-ms` of the settings in force, for the signal thread (settings themselves are the main
    /// thread's: a reload replaces them).
    private let stopTimeoutMs = Atomic<Int>(3000)
    private let deadline = ShutdownDeadline()
    /// The site's link over MQTT: site policy documents in, anti-passback uses out and in.
    private let site = SiteLink()
    /// The credential and policy settings in force, for a site policy document arriving on the MQTT
    /// thread; held while the policies are built and while a document is recorded, as both write
    /// policy-state-file.
    private let policyInputs = PosixMutex<(credential: CredentialSettings, policy: PolicySettings)?>(nil)

    /// `logger`: where the log goes (stderr at the configured level unless given: in-process tests read it).
    init(configPath: String?, flags: [(OptionSpec, String)], settings: RunSettings, seams: DeviceSeams = DeviceSeams(),
         logger: Logger? = nil) {
        self.configPath = configPath
        self.flags = flags
        self.settings = settings
        stopTimeoutMs.store(settings.service.stopTimeoutMs, ordering: .relaxed)
        self.seams = seams
        self.logger = logger ?? Logger(level: settings.logLevel)
    }

    /// Stops the daemon as SIGTERM does, without the hard deadline: run() returns after closing everything.
    func requestStop() {
        let p = control.withLock { c in c.terminating = true; return c.pipeline }
        p?.stopForSignal()
    }

    // MARK: pause and reload, from signals and from MQTT commands

    /// Pauses or resumes decoding; false when it already was so.
    @discardableResult
    func setPaused(_ paused: Bool) -> Bool {
        let (p, changed) = control.withLock { c -> (Pipeline?, Bool) in
            guard c.paused != paused else { return (nil, false) }
            c.paused = paused
            return (c.pipeline, true)
        }
        if changed { p?.setPaused(paused) }
        return changed
    }

    var isPaused: Bool { control.withLock { $0.paused } }

    /// Reads the config again (as SIGHUP does): the running pipeline stops and the daemon rebuilds what
    /// changed.
    /// The configuration file and flags as a reload would read them, checked without side effects:
    /// nil when they load, else the error a reload would log.
    func checkConfiguration() -> String? {
        do {
            let new = try Configuration.resolve(configPath: configPath, flagAssignments: flags)
            try Catalog.check(new, components: Catalog.components(seams))
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// A config file's text as a reload would read it in place of `configPath`, checked without side
    /// effects: nil when it loads, else the error. Used for a file an OSDP panel sends, before it is written.
    func checkConfiguration(text bytes: [UInt8]) -> String? {
        guard let configPath else { return "scangate runs without a config file (flags only)" }
        do {
            var new = RunSettings()
            let entries = try ConfigFile.parse(String(decoding: bytes, as: UTF8.self), name: configPath)
            try ConfigFile.apply(entries, from: configPath, to: &new)
            try CommandLineParser.apply(flags, to: &new)
            try Catalog.check(new, components: Catalog.components(seams))
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Writes a config file that a panel sent over `configPath` (the file a symbolic link names, if it is
    /// one), atomically and with the old file's mode, then reloads. It is checked again first: a file that
    /// would be refused is never written.
    func installConfiguration(_ bytes: [UInt8], from origin: String) {
        guard let configPath else {
            return logger.warning("\(origin): scangate runs without a config file (flags only); the file is not installed")
        }
        if let problem = checkConfiguration(text: bytes) {
            return logger.warning("\(origin): the config file was refused and \(configPath) is unchanged: \(problem)")
        }
        var target = configPath
        if let resolved = realpath(configPath, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        var info = stat()
        let mode: mode_t = stat(target, &info) == 0 ? info.st_mode & 0o7777 : 0o644
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(target, with: bytes, mode: mode,
                                   temporary: FilePath.parent(of: target) + "/." + FilePath.name(of: target) + ".tmp-\(getpid())")
        } catch {
            if !error.replaced {
                return logger.error("\(origin): cannot write \(target): \(error); the config in force is unchanged")
            }
            logger.warning("\(origin): \(target) was replaced, but syncing its directory failed (\(error)); after a power cut the old file may be back")
        }
        logger.notice("\(origin): installed a \(bytes.count)-byte config file as \(target)")
        requestReload(from: origin)
    }

    func requestReload(from origin: String) {
        logger.notice("\(origin): reloading \(configPath ?? "(no config file; flags only)")")
        let p = control.withLock { c in c.reloadRequested = true; return c.pipeline }
        p?.stopForReload()
    }

    /// What lives as long as the run: built once by `wire`, stopped once by `shutdown`.
    private struct Wiring {
        let components: [Component]
        let notifier: ServiceNotifier
        let watchdog: Watchdog?
        let hub: FeedbackHub
        let journal: JournalLogSink
        let status: StatusBoard
        let outputs: OutputSet
        let telemetry: DaemonTelemetry
        let services: DaemonServices
        /// Reloads when a status list changes on disk.
        let statusListWatcher: FileChangeWatcher
        let policyWatcher: FileChangeWatcher
        /// Started in order (services, journal, feedback, outputs), stopped in reverse with one deadline.
        let group: ServiceGroup
        let signals: SignalHandlers
        /// What camera-tamper's watch says, for the OSDP tamper and the camera's status row.
        let scene: CameraSceneSignal
    }

    /// What one pipeline run starts from; a reload replaces parts of it.
    private struct RunState {
        var source: FrameSource
        var decoder: Decoder
        var policies: [any ReadPolicy]
        var debouncer: Debouncer
        var sourceOpen = false
        var firstSeq: UInt64 = 1
        var outcome: Pipeline.Outcome = .finished
        var endedOnItsOwn = false
    }

    func run() -> Int32 {
        // zbar prints its own assertion reports on stdio's stderr: through the logger, at debug level.
        LibraryStderr.shared.route(to: logger)
        // The MQTT output reports the daemon's state and carries out its commands through these.
        let telemetryBox = TelemetryBox()
        let components = Catalog.components(seams, fleet: MQTTHooks(
            state: { telemetryBox.mqttState() }, commands: DaemonCommands(daemon: self), site: site))
        site.takePolicies { [weak self] bytes, _ in
            self?.deliverSitePolicy(bytes) ?? .refused("the daemon is stopping")
        }
        defer { site.takePolicies(nil) }
        // Everything that can be refused is checked before any device is opened.
        var run: RunState
        do {
            run = try prepare(settings, components: components, debouncer: Debouncer(settings: settings.debounce))
        } catch {
            return usageError(Configuration.explain("\(error)", configPath: configPath, flagAssignments: flags))
        }
        // One daemon per status socket, and each serial port to one daemon: a second one stops here,
        // before it opens, binds or writes anything (the first one's metrics file included).
        let locks: [DaemonLock]
        switch DaemonClaims.take(settings, logger: logger) {
        case .success(let taken): locks = taken
        case .failure(let refusal): return usageError(refusal.message)
        }
        defer { locks.forEach { $0.release() } }
        run.decoder = FaultInjection.wrap(run.decoder, logger: logger)
        let wiring = wire(components, camera: run.source.name, telemetryBox: telemetryBox)
        wiring.telemetry.policiesInForce(run.policies)
        wiring.telemetry.cameraControls.hold(source: run.source.name, controls: run.source.liveControls)
        do {
            try wiring.signals.start()
        } catch {
            logger.error("cannot start the signal thread: \(error)")
            return ExitCode.failure.rawValue
        }
        logger.info("scangate \(ScanGateCommand.version): reading \(run.source.name)")
        do {
            try wiring.group.start()
        } catch {
            wiring.signals.cancel()
            return usageError("\(error)")
        }
        wiring.services.apply(settings.service)
        reloadLoop(&run, wiring)
        shutdown(run, wiring)
        return exitCode(run.outcome)
    }

    /// The checks check-config and doctor make, first and alike; then what opens files and devices.
    private func prepare(_ settings: RunSettings, components: [Component], debouncer: Debouncer) throws -> RunState {
        try Catalog.check(settings, components: components)
        return RunState(source: try SourceFactory.make(settings.capture, logger: logger),
                        decoder: try StreamDecoder.make(settings: settings.decoder, logger: logger),
                        policies: try buildPolicies(settings), debouncer: debouncer)
    }

    /// The read policies for `settings`, built while no site policy document is being recorded.
    private func buildPolicies(_ settings: RunSettings) throws -> [any ReadPolicy] {
        try policyInputs.withLock { inputs throws -> [any ReadPolicy] in
            let built = try Catalog.policies(settings, logger: logger, site: site)
            inputs = (settings.credential, settings.policy)
            return built
        }
    }

    /// A site policy document from MQTT: verified and recorded with the settings in force; when it is
    /// newer than the one held, the daemon reloads to use it.
    private func deliverSitePolicy(_ bytes: [UInt8]) -> SiteLink.PolicyOutcome {
        let outcome = policyInputs.withLock { inputs -> SiteLink.PolicyOutcome in
            guard let inputs, inputs.credential.format != .off else { return .refused("signed passes are off (credential-format)") }
            return CredentialPolicy.deliverSitePolicy(bytes, settings: inputs.credential, policy: inputs.policy)
        }
        if case .installed = outcome { requestReload(from: "site policy over MQTT") }
        return outcome
    }

    /// Builds what lives as long as the run and the signal handlers over it; opens no device yet.
    private func wire(_ components: [Component], camera: String, telemetryBox: TelemetryBox) -> Wiring {
        let notifier = ServiceNotifier(logger: logger)
        let watchdog = Watchdog.make(notifier: notifier, logger: logger)
        let hub = FeedbackHub(settings: settings.feedback, logger: logger)
        let journal = JournalLogSink(logger: logger)
        let status = StatusBoard(logger: logger, observers: [hub, notifier, journal] + (watchdog.map { [$0] } ?? []))
        let scene = CameraSceneSignal()
        let outputs = OutputSet(components: components, context: OutputContext(logger: logger, feedback: hub, links: status, configFile: configPath == nil ? nil : ConfigFileInstaller(
            check: { [self] bytes in checkConfiguration(text: bytes) },
            install: { [self] bytes in installConfiguration(bytes, from: "osdp file transfer") }), scene: scene))
        status.addObserver(outputs)
        let telemetry = DaemonTelemetry(status: status, camera: camera, outputs: { outputs.outputs }, site: site, scene: scene,
                                        liveView: LiveView())
        telemetryBox.set(telemetry)
        let services = DaemonServices(logger: logger, telemetry: telemetry)
        let watcher = FileChangeWatcher("status lists", change: "status list", threadName: "status-list-watch", logger: logger) {
            [self] change in requestReload(from: change)
        }
        let policyWatcher = FileChangeWatcher("site policy", change: "site policy", threadName: "policy-watch", logger: logger) {
            [self] change in requestReload(from: change)
        }
        // Feedback devices before the outputs: a door output's inputs (the Wiegand panel's LED and beeper
        // wires, an OSDP panel's first LED command) may speak as soon as the output starts.
        let group = ServiceGroup([
            AnyService("status socket and metrics", stop: { _ in services.close() }),
            AnyService("journal", stop: { journal.close(deadline: $0) }),
            AnyService("status list watch", start: { [self] in try watcher.start(path: Self.watchedStatusList(settings)) },
                       stop: { watcher.close(deadline: $0) }),
            AnyService("site policy watch", start: { [self] in try policyWatcher.start(path: Self.watchedPolicy(settings)) },
                       stop: { policyWatcher.close(deadline: $0) }),
            AnyService("feedback", start: { [self] in installFeedback(components, hub, from: nil, to: settings) },
                       stop: { hub.close(deadline: $0) }, forceInactive: { hub.forceInactive() }),
            AnyService("outputs", start: { [self] in try outputs.start(settings) },
                       stop: { outputs.close(deadline: $0) }, forceInactive: { outputs.forceInactive() }),
        ], logger: logger)
        let wiring = Wiring(components: components, notifier: notifier, watchdog: watchdog, hub: hub, journal: journal,
                            status: status, outputs: outputs, telemetry: telemetry, services: services,
                            statusListWatcher: watcher, policyWatcher: policyWatcher, group: group,
                            signals: SignalHandlers(), scene: scene)
        handleSignals(wiring)
        return wiring
    }

    private func handleSignals(_ wiring: Wiring) {
        wiring.signals.on([SIGINT, SIGTERM]) { [self] sig in
            let timeout = stopTimeoutMs.load(ordering: .relaxed)
            logger.notice("signal \(sig == SIGINT ? "SIGINT" : "SIGTERM"): stopping (within \(timeout) ms)")
            requestStop()
            deadline.arm(milliseconds: timeout, logger: logger) {
                wiring.group.forceInactive()
                wiring.services.lastWord()
            }
        }
        wiring.signals.on([SIGUSR1]) { [self] _ in setPaused(!isPaused) }
        wiring.signals.on([SIGHUP]) { [self] _ in requestReload(from: "signal SIGHUP") }
    }

    /// The status lists a change of which reloads: credential-status-list, when passes are checked.
    static func watchedStatusList(_ settings: RunSettings) -> String? {
        settings.credential.format == .off ? nil : settings.credential.statusList
    }

    /// The site policy a change of which reloads: policy-file, when passes are checked.
    static func watchedPolicy(_ settings: RunSettings) -> String? {
        settings.credential.format == .off ? nil : settings.policy.file
    }

    /// Runs the pipeline until it ends for good; a reload that loads rebuilds what changed and runs again.
    private func reloadLoop(_ run: inout RunState, _ wiring: Wiring) {
        while true {
            let (pipeline, reload) = runPipeline(&run, wiring)
            guard reload, run.outcome == .finished else { return }
            wiring.notifier.reloading()
            let carry = pipeline.carryOver
            run.firstSeq = carry.nextSeq
            do {
                try reconfigure(&run, wiring, carry: carry)
            } catch {
                logger.error("reload failed, keeping the running configuration: \(error)")
            }
            wiring.notifier.ready()
        }
    }

    /// One pipeline run over the outputs: returns the pipeline and whether a reload ended it.
    private func runPipeline(_ run: inout RunState, _ wiring: Wiring) -> (Pipeline, reload: Bool) {
        var options = Pipeline.Options()
        options.oneshot = settings.oneshot
        options.maxFrames = settings.capture.maxFrames
        options.sourceAlreadyOpen = run.sourceOpen
        options.firstSeq = run.firstSeq
        let dispatcher = ReadDispatcher(policies: run.policies, doors: wiring.outputs.doors,
                                        reports: wiring.outputs.reports + [wiring.journal, wiring.telemetry], feedback: wiring.hub)
        let telemetry = wiring.telemetry, watchdog = wiring.watchdog
        let tamper = settings.cameraTamper
        // Each run learns the scene afresh (a reload after re-aiming the camera).
        wiring.scene.setWatching(false)
        let sceneWatch = tamper.enabled
            ? SceneWatch(afterSeconds: tamper.afterSeconds, darkLevel: tamper.darkLevel, signal: wiring.scene, logger: logger) : nil
        let decoder = settings.decoder
        wiring.telemetry.liveView.setGate(decoder.idleRescanFrames > 0
            ? LiveView.Gate(threshold: decoder.changeThreshold, rescanFrames: decoder.idleRescanFrames) : nil)
        let pipeline = Pipeline(source: run.source, decoder: run.decoder, debouncer: run.debouncer, dispatcher: dispatcher,
                                status: wiring.status, logger: logger, options: options, sceneWatch: sceneWatch,
                                liveView: wiring.telemetry.liveView,
                                onFrameDecoded: { _, ms in
                                    watchdog?.progress()
                                    telemetry.frameDecoded(milliseconds: ms)
                                })
        telemetry.running(pipeline)
        let (terminating, paused, reloadWaiting) = control.withLock { c in
            c.pipeline = pipeline
            return (c.terminating, c.paused, c.reloadRequested)
        }
        if terminating { pipeline.stopForSignal() }
        // Asked for while the last reload was being carried out: this run is the old configuration.
        else if reloadWaiting { pipeline.stopForReload() }
        if paused { pipeline.setPaused(true) }
        run.outcome = pipeline.run()
        telemetry.ended(pipeline)
        let reload = control.withLock { c in
            c.pipeline = nil
            defer { c.reloadRequested = false }
            return c.reloadRequested && !c.terminating
        }
        // A reload ends one pipeline run, not the daemon: say so, so it does not read like a crash.
        let counts = "\(pipeline.stats.captured) frames captured, \(pipeline.stats.decoded) decoded, "
            + "\(pipeline.droppedFrames) dropped, \(pipeline.stats.reported) codes reported"
        logger.info(reload && run.outcome == .finished ? "reloading the configuration (this run: \(counts))" : "stopped: \(counts)")
        run.sourceOpen = pipeline.sourceLeftOpen
        run.endedOnItsOwn = !pipeline.wasSignalled
        return (pipeline, reload)
    }

    /// Reads the configuration again and moves to it: the camera is reopened only when its settings
    /// changed, each output and feedback device only when its own did. Throws (nothing changed) when
    /// the new configuration does not load.
    private func reconfigure(_ run: inout RunState, _ wiring: Wiring, carry: (nextSeq: UInt64, debouncer: Debouncer)) throws {
        let new = try Configuration.resolve(configPath: configPath, flagAssignments: flags)
        try Catalog.check(new, components: wiring.components)
        let policies = try buildPolicies(new)
        let decoder = try StreamDecoder.make(settings: new.decoder, logger: logger)
        let newSource = new.capture == settings.capture ? nil : try SourceFactory.make(new.capture, logger: logger)
        run.policies = policies
        wiring.telemetry.policiesInForce(policies)
        run.decoder = decoder
        if let newSource {
            logger.notice("camera settings changed: reopening \(new.capture.camera)")
            if run.sourceOpen { run.source.close() }
            run.sourceOpen = false
            run.source = newSource
            wiring.telemetry.cameraControls.hold(source: newSource.name, controls: newSource.liveControls)
        } else {
            logger.notice("camera settings unchanged: the stream stays open")
        }
        run.debouncer = new.debounce == settings.debounce ? carry.debouncer : Debouncer(settings: new.debounce)
        wiring.outputs.reconfigure(from: settings, to: new)
        installFeedback(wiring.components, wiring.hub, from: settings, to: new)
        wiring.services.apply(new.service)
        wiring.statusListWatcher.follow(path: Self.watchedStatusList(new))
        wiring.policyWatcher.follow(path: Self.watchedPolicy(new))
        wiring.hub.settings = new.feedback
        settings = new
        stopTimeoutMs.store(new.service.stopTimeoutMs, ordering: .relaxed)
        logger.level = new.logLevel
        logger.notice("reloaded: \(configPath.map { "defaults, then \($0)" } ?? "defaults and flags"); scanning")
    }

    /// Lets started feedback finish when the run ended on its own, then stops everything in reverse
    /// order by one deadline.
    private func shutdown(_ run: RunState, _ wiring: Wiring) {
        // Ending on its own (end of replay, --oneshot, --max-frames): let started feedback finish.
        if run.endedOnItsOwn { wiring.hub.waitUntilIdle(deadline: .now().adding(milliseconds: 1500)) }
        wiring.status.setCapture(.stopping)
        let closeBy = MonotonicInstant.now().adding(milliseconds: Double(min(2000, settings.service.stopTimeoutMs)))
        wiring.group.stop(deadline: closeBy)
        if run.sourceOpen { run.source.close() }
        wiring.signals.cancel()
        wiring.watchdog?.close()
        wiring.notifier.close()
        deadline.finished()
    }

    /// Builds, rebuilds or removes each feedback device whose settings changed (all of them at start).
    private func installFeedback(_ components: [Component], _ hub: FeedbackHub, from old: RunSettings?, to new: RunSettings) {
        for component in components {
            guard case .feedback(let factory) = component.role else { continue }
            if let old, factory.sameSettings(old, new) { continue }
            if old != nil {
                logger.notice("\(component.name): settings changed; reopening")
                hub.install(nil, slot: component.name)
            }
            hub.install(factory.make(new, logger), slot: component.name)
        }
    }

    private func exitCode(_ outcome: Pipeline.Outcome) -> Int32 {
        switch outcome {
        case .finished: return ExitCode.success.rawValue
        case .badInput(let message): return usageError(message)
        case .failed(let message):
            logger.error(message)
            return ExitCode.failure.rawValue
        }
    }
}

/// The status socket and the metrics file: rebuilt when their settings change, closed at exit.
/// The status socket and the metrics file, (re)built from `[service]` by the main thread; the stop
/// deadline's last word reaches the metrics file from the signal thread.
final class DaemonServices: Sendable {
    let logger: Logger
    let telemetry: DaemonTelemetry
    fileprivate struct State {
        var applied: ServiceSettings?
        var socket: StatusSocket?
        var metrics: MetricsTextfile?
    }
    private let state = PosixMutex(State())

    init(logger: Logger, telemetry: DaemonTelemetry) {
        self.logger = logger
        self.telemetry = telemetry
    }

    func apply(_ settings: ServiceSettings) {
        state.withLock { s in s.apply(settings, logger: logger, telemetry: telemetry) }
    }

    /// The stop deadline ran out: the metrics file says scangate_up 0 (waits at most 200 ms; see writeDown).
    func lastWord() {
        let metrics = state.withLockIfAvailable { $0.metrics } ?? nil
        metrics?.writeDown()
    }

    func close() {
        let (socket, metrics) = state.withLock { s in (s.socket, s.metrics) }
        socket?.close()
        metrics?.close()
    }
}

extension DaemonServices.State {
    mutating func apply(_ settings: ServiceSettings, logger: Logger, telemetry: DaemonTelemetry) {
        if applied?.statusSocket != settings.statusSocket {
            socket?.close()
            socket = nil
            if settings.statusSocket != "off" {
                let path = settings.statusSocket == "auto" ? StatusSocket.defaultPath() : settings.statusSocket
                do throws(SystemError) {
                    socket = try StatusSocket(path: path, provider: { telemetry.statusReport() },
                                              snapshot: { telemetry.snapshot() }, controls: telemetry.cameraControls,
                                              logger: logger)
                    logger.info("status: answering scangate status on \(path)")
                } catch {
                    logger.warning("status: \(error); scangate status will not reach this daemon (set status-socket to a writable path, or off)")
                }
            }
        }
        if applied?.metricsTextfile != settings.metricsTextfile || applied?.metricsIntervalSeconds != settings.metricsIntervalSeconds {
            metrics?.close()
            metrics = nil
            if !settings.metricsTextfile.isEmpty {
                do throws(SystemError) {
                    metrics = try MetricsTextfile(path: settings.metricsTextfile,
                                                  intervalSeconds: Double(settings.metricsIntervalSeconds),
                                                  provider: { telemetry.metrics() }, logger: logger)
                    logger.info("metrics: writing \(settings.metricsTextfile) every \(settings.metricsIntervalSeconds) s")
                } catch {
                    logger.error("metrics: \(error); no metrics file is written")
                }
            }
        }
        applied = settings
    }
}

/// Holds the telemetry for the MQTT output's state provider, which exists before the telemetry does.
final class TelemetryBox: Sendable {
    private let value = PosixMutex<DaemonTelemetry?>(nil)
    func set(_ telemetry: DaemonTelemetry) { value.withLock { $0 = telemetry } }
    func mqttState() -> MQTTState {
        value.withLock { $0 }?.mqttState() ?? MQTTState(status: .starting, version: ScanGateCommand.version, uptimeSeconds: 0)
    }
}

/// MQTT's pause, resume and reload, carried out by the daemon as SIGUSR1 and SIGHUP would be.
final class DaemonCommands: MQTTCommandHandler, @unchecked Sendable {
    private weak var daemon: Daemon?
    init(daemon: Daemon) { self.daemon = daemon }

    func perform(_ command: MQTTDaemonCommand) -> MQTTCommandOutcome {
        guard let daemon else { return .failed("the daemon is stopping") }
        switch command {
        case .pause: return daemon.setPaused(true) ? .done("paused") : .failed("already paused")
        case .resume: return daemon.setPaused(false) ? .done("scanning") : .failed("not paused")
        case .reload:
            // Checked first, so the result says whether the file loads; the reload itself follows on the
            // main thread (this thread may be the MQTT output a reload rebuilds, so it does not wait).
            if let error = daemon.checkConfiguration() {
                return .failed("the configuration does not load, nothing changed: \(error)")
            }
            daemon.requestReload(from: "MQTT command reload")
            return .done("the configuration loads; reloading")
        }
    }
}

/// The bound on shutdown (`stop-timeout-ms`). Armed by SIGTERM/SIGINT; when the daemon has not finished
/// by then (a thread stuck in a blocking call), it drives every output inactive and ends the process
/// with status 0, as a stop that systemd asked for.
final class ShutdownDeadline: Sendable {
    private let state = PosixMutex<(armed: Bool, finished: Bool, timer: Worker<Never>?)>((false, false, nil))

    func arm(milliseconds: Int, logger: Logger, emergency: @escaping @Sendable () -> Void) {
        let until = MonotonicInstant.now().adding(milliseconds: Double(milliseconds))
        state.withLock { s in
            guard !s.armed, !s.finished else { return }
            s.armed = true
            s.timer = try? Worker<Never>(name: "scangate-stop", capacity: 1, overflow: .refuse) { inbox in
                while !inbox.isStopping {
                    guard !inbox.wait(until: until), MonotonicInstant.now() >= until else { continue }
                    logger.error("shutdown did not finish within \(milliseconds) ms (stop-timeout-ms): a thread is stuck "
                                 + "in a blocking call; outputs driven inactive, exiting")
                    emergency()
                    _exit(0)
                }
            }
        }
    }

    /// The daemon finished in time: the deadline thread ends.
    func finished() {
        let timer = state.withLock { s -> Worker<Never>? in
            s.finished = true
            return s.timer
        }
        timer?.stop(deadline: .now().adding(milliseconds: 1000))
    }
}

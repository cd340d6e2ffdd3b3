import Config
import Core
import Debounce
import Decoding
import Pipeline
import Service
import Synchronization

/// `scangate run`: the daemon.
enum RunCommand {
    static func run(_ arguments: [String]) -> Int32 {
        // Before any thread exists: see SignalHandlers.
        SignalHandlers.blockSignals()
        let parsed: CommandLineParser.Result
        let settings: RunSettings
        do {
            parsed = try CommandLineParser.parse(arguments)
            if parsed.help {
                print(help)
                return 0
            }
            settings = try Configuration.resolve(configPath: parsed.configPath, flagAssignments: parsed.assignments)
        } catch {
            return usageError(error.message)
        }
        return Daemon(configPath: parsed.configPath, flags: parsed.assignments, settings: settings).run()
    }

    static var help: String {
        """
        Usage: scangate run [--config FILE] [OPTIONS]

        Reads codes from a camera, the simulator or a recording, reports each code once on stdout
        (one JSON object per line by default) and to the configured devices.
        Options override the config file; each is also a key (same name) in the file's section.
        Switches take --no-NAME to turn them off.

        \(CommandLineParser.helpText())

        Sources:
          sim:PAYLOAD          a QR code of PAYLOAD appears for 2 s and leaves for 2 s, forever
          sim:FILE.scenario    a scenario file (docs/scenario-format.md)
          replay:FILE.y4m      YUV4MPEG2 recording (mono or 4:2:0; luma is used); exits 0 at the end
          replay:DIR           PGM/PNG/JPEG frames in name order
          /dev/videoN          a V4L2 camera (or a /dev/v4l/by-id/... link)

        Signals: SIGINT/SIGTERM stop (exit 0); SIGUSR1 pauses/resumes decoding;
        SIGHUP reloads the config file (the camera stays open when its settings did not change).
        """
    }
}

/// One daemon run: builds the pipeline from the settings, runs it, and rebuilds it on SIGHUP.
final class Daemon: @unchecked Sendable {
    private let configPath: String?
    private let flags: [(OptionSpec, String)]
    private var settings: RunSettings
    private let logger: Logger

    private struct Control {
        var pipeline: Pipeline?
        var paused = false
        var reloadRequested = false
        var terminating = false
    }
    private let control = Mutex(Control())

    init(configPath: String?, flags: [(OptionSpec, String)], settings: RunSettings) {
        self.configPath = configPath
        self.flags = flags
        self.settings = settings
        self.logger = Logger(level: settings.logLevel)
    }

    func run() -> Int32 {
        var source: FrameSource
        do {
            source = try SourceFactory.make(settings.capture, logger: logger)
        } catch {
            return usageError("\(error)")
        }
        // systemd: notifications and the watchdog live for the whole run, across reloads.
        let notifier = ServiceNotifier(logger: logger)
        let watchdog = Watchdog.make(notifier: notifier, logger: logger)
        let signals = SignalHandlers()
        signals.on([SIGINT, SIGTERM]) { [self] sig in
            logger.notice("signal \(sig == SIGINT ? "SIGINT" : "SIGTERM"): stopping")
            let p = control.withLock { c in c.terminating = true; return c.pipeline }
            p?.stopForSignal()
        }
        signals.on([SIGUSR1]) { [self] _ in
            let (p, paused) = control.withLock { c in c.paused.toggle(); return (c.pipeline, c.paused) }
            p?.setPaused(paused)
        }
        signals.on([SIGHUP]) { [self] _ in
            logger.notice("signal SIGHUP: reloading \(configPath ?? "(no config file; flags only)")")
            let p = control.withLock { c in c.reloadRequested = true; return c.pipeline }
            p?.stopForReload()
        }
        do {
            try signals.start()
        } catch {
            logger.error("cannot start the signal thread: \(error)")
            return ExitCode.failure.rawValue
        }
        defer {
            signals.cancel()
            watchdog?.close()
            notifier.close()
        }
        logger.info("scangate \(ScanGateCommand.version): reading \(source.name)")
        var sourceOpen = false
        var firstSeq: UInt64 = 1
        var debouncer = Debouncer(settings: settings.debounce)
        while true {
            let decoder: Decoder
            let sinks: [EventSink]
            let policies: [PayloadPolicy]
            do {
                policies = try SinkFactory.policies(settings)
                decoder = try ZbarDecoder.makeForStream(settings: settings.decoder)
                sinks = try SinkFactory.make(settings, logger: logger)
            } catch {
                if sourceOpen { source.close() }
                return usageError("\(error)")
            }
            var options = Pipeline.Options()
            options.oneshot = settings.oneshot
            options.maxFrames = settings.capture.maxFrames
            options.sourceAlreadyOpen = sourceOpen
            options.firstSeq = firstSeq
            let persistent: [EventSink] = [notifier] + (watchdog.map { [$0] } ?? [])
            let pipeline = Pipeline(source: source, decoder: decoder, debouncer: debouncer, policies: policies,
                                    sinks: sinks + [JournalLogSink(logger: logger)] + persistent.map(KeepOpen.init),
                                    logger: logger, options: options,
                                    onFrameDecoded: { _, _ in watchdog?.progress() })
            let (terminating, paused) = control.withLock { c in
                c.pipeline = pipeline
                return (c.terminating, c.paused)
            }
            if terminating { pipeline.stopForSignal() }
            if paused { pipeline.setPaused(true) }
            let outcome = pipeline.run()
            let reload = control.withLock { c in
                c.pipeline = nil
                defer { c.reloadRequested = false }
                return c.reloadRequested && !c.terminating
            }
            logger.info("stopped: \(pipeline.stats.captured) frames captured, \(pipeline.stats.decoded) decoded, "
                        + "\(pipeline.droppedFrames) dropped, \(pipeline.stats.reported) codes reported")
            guard reload, outcome == .finished else { return exitCode(outcome) }

            notifier.reloading()
            let carry = pipeline.carryOver
            firstSeq = carry.nextSeq
            sourceOpen = pipeline.sourceLeftOpen
            let new: RunSettings
            do {
                new = try Configuration.resolve(configPath: configPath, flagAssignments: flags)
            } catch {
                logger.error("reload failed, keeping the running configuration: \(error.message)")
                notifier.ready()
                continue
            }
            if new.capture != settings.capture {
                logger.notice("camera settings changed: reopening \(new.capture.camera)")
                if sourceOpen { source.close() }
                sourceOpen = false
                do {
                    source = try SourceFactory.make(new.capture, logger: logger)
                } catch {
                    return usageError("\(error)")
                }
            } else {
                logger.notice("camera settings unchanged: the stream stays open")
            }
            debouncer = new.debounce == settings.debounce ? carry.debouncer : Debouncer(settings: new.debounce)
            settings = new
            logger.level = new.logLevel
            notifier.ready()
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

/// Passes events and status to a sink that outlives one pipeline (systemd notifier, watchdog) without
/// letting the pipeline close it.
final class KeepOpen: EventSink {
    let inner: EventSink
    init(_ inner: EventSink) { self.inner = inner }
    var name: String { inner.name }
    func handle(_ event: ReadEvent) { inner.handle(event) }
    func statusChanged(_ status: DaemonStatus) { inner.statusChanged(status) }
    func close() {}
}

import Config
import Core
import Debounce
import Decoding
import Pipeline

/// `scangate run`: the daemon.
enum RunCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let settings: RunSettings
        do {
            let parsed = try CommandLineParser.parse(arguments)
            if parsed.help {
                print(help)
                return 0
            }
            var s = RunSettings()
            try CommandLineParser.apply(parsed.assignments, to: &s)
            settings = s
        } catch {
            return usageError(error.message)
        }
        return runDaemon(settings)
    }

    static func runDaemon(_ settings: RunSettings) -> Int32 {
        let logger = Logger(level: settings.logLevel)
        let source: FrameSource
        let decoder: Decoder
        let sinks: [EventSink]
        let policies: [PayloadPolicy]
        do {
            policies = try SinkFactory.policies(settings)
            source = try SourceFactory.make(settings.capture, logger: logger)
            decoder = try ZbarDecoder.makeForStream(settings: settings.decoder)
            sinks = try SinkFactory.make(settings, logger: logger)
        } catch let error as UsageError {
            return usageError(error.message)
        } catch {
            return usageError("\(error)")
        }
        var options = Pipeline.Options()
        options.oneshot = settings.oneshot
        options.maxFrames = settings.capture.maxFrames
        let pipeline = Pipeline(source: source, decoder: decoder,
                                debouncer: Debouncer(settings: settings.debounce),
                                policies: policies, sinks: sinks, logger: logger,
                                options: options)
        let signals = SignalHandlers()
        signals.on([SIGINT, SIGTERM]) { sig in
            logger.notice("signal \(sig == SIGINT ? "SIGINT" : "SIGTERM"): stopping")
            pipeline.stop()
        }
        signals.on([SIGUSR1]) { _ in pipeline.setPaused(!pipeline.isPaused) }
        logger.info("scangate \(ScanGateCommand.version): \(source.name), \(settings.capture.width)x\(settings.capture.height)")
        let outcome = pipeline.run()
        signals.cancel()
        logger.info("stopped: \(pipeline.stats.captured) frames captured, \(pipeline.stats.decoded) decoded, "
                    + "\(pipeline.droppedFrames) dropped, \(pipeline.stats.reported) codes reported")
        switch outcome {
        case .finished: return ExitCode.success.rawValue
        case .badInput(let message): return usageError(message)
        case .failed(let message):
            logger.error(message)
            return ExitCode.failure.rawValue
        }
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

        Signals: SIGINT/SIGTERM stop (exit 0); SIGUSR1 pauses/resumes decoding; SIGHUP reloads the config.
        """
    }
}

import Config
import Core
import Debounce
import Decoding
import Pipeline
import Service
import Synchronization
import Catalog
import Settings

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
        \(CommandLineParser.switchHelp)
        Times carry their unit in the name: -ms milliseconds, -s seconds, -us microseconds, -h hours.

        \(CommandLineParser.helpText())

        Sources:
          sim:PAYLOAD          a QR code of PAYLOAD appears for 2 s and leaves for 2 s, forever
          sim:FILE.scenario    a scenario file (docs/scenario-format.md)
          replay:FILE.y4m      YUV4MPEG2 recording (mono or 4:2:0; luma is used); exits 0 at the end
          replay:DIR           PGM/PNG/JPEG frames in name order
          /dev/videoN          a V4L2 camera (or a /dev/v4l/by-id/... link)

        Signals: SIGINT/SIGTERM stop (exit 0, within stop-timeout-ms even if a thread is stuck; every
        output is left inactive); SIGUSR1 pauses/resumes decoding; SIGHUP reloads the config file (the
        camera stays open when its settings did not change, and each output is rebuilt only when its
        own settings did).

        One daemon per status socket: run holds a lock beside it (STATUS-SOCKET.lock, the pid inside); a
        second one with the same status-socket exits 2 naming the first one's pid. Serial and OSDP ports
        are opened exclusively (the lock file /run/lock/LCK..NAME and TIOCEXCL); a port another process
        holds stops run with exit 2, naming that process.
        """
    }
}

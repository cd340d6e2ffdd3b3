import Config
import Core
import Images
import Platform
import Preview
import Service
import Settings
#if canImport(Glibc)
import Glibc
#endif

/// `scangate preview`: a live page of what the running daemon's camera sees, for aiming it. Asks the daemon
/// over its status socket (as `status` does; the camera is never opened here) and serves the page with
/// libmicrohttpd (Sources/Preview).
public enum PreviewCommand {
    public static let usage = """
        usage: scangate preview [--listen 127.0.0.1:8470] [--status-socket PATH] [--config FILE]
                                [--allow-remote --token-file FILE] [--max-clients N] [--fps N]

        Serves a live page of what the running daemon's camera sees, for aiming and focusing it: the
        newest frame with each code's corners outlined in red (an MJPEG stream), the brightness
        histogram and mean, the sharpness, the frame rate, the codes in view and the last reads (a
        signed pass: its fingerprint only), and the camera's controls when the daemon offers them.
        The daemon keeps scanning; nothing is asked of it while no page is open.
          --listen ADDR:PORT    where to serve (default \(ListenAddress.defaultText)); [IPV6]:PORT for IPv6.
                                From another machine, use an SSH tunnel:
                                  ssh -L 8470:127.0.0.1:8470 pi@kiosk   then open http://127.0.0.1:8470/
          --allow-remote        allow an address other than loopback (127.0.0.0/8, ::1); needs --token-file
          --token-file FILE     the token every request must carry (?token=... or Authorization: Bearer ...),
                                one line of 16 to 256 printable characters; mode 0600 (not readable by
                                group or others)
          --max-clients N       streams served at once, 1 to 32 (default 4); more get 503
          --fps N               frames a second per stream, 1 to 30 (default 5)
          --config FILE         the daemon's config file: its status-socket is the one asked
          --status-socket PATH  the daemon's status socket (default \(StatusSocket.defaultPath()))
          -h, --help            show this help
        Pages: / (the page), /stream.mjpg, /view.json, /status.json, /clients.json, /controls.json.
        Each connection is dropped after \(connectionTimeoutSeconds) s without traffic; at most \(connectionLimit) at once.
        SIGINT/SIGTERM stop it (exit 0). Exit 2 for a bad flag, address or token file; 3 when it cannot listen.
        """

    /// A connection with no traffic for this long is closed (a slow client cannot hold a thread).
    static let connectionTimeoutSeconds: UInt32 = 10
    /// TCP connections at once (streams, page loads, JSON polls); more are closed when accepted.
    static let connectionLimit: UInt32 = 64
    /// Bytes MHD gives one connection for its request line and headers; more is refused with a 4xx.
    static let connectionMemoryLimit = 32 * 1024

    public static func run(_ args: [String]) -> Int32 {
        // Before any thread exists: see SignalHandlers.
        SignalHandlers.blockSignals()
        let address: ListenAddress
        let options: PreviewServer.Options
        let socket: String
        do throws(UsageError) {
            let parsed = try CommandLineParser.parse(args, table: OptionTable.service.filter { $0.name == "status-socket" },
                                                     aliases: ["socket": "status-socket"],
                                                     local: [.init("listen", value: "ADDRESS:PORT"), .init("allow-remote"),
                                                             .init("token-file", value: "FILE"), .init("max-clients", value: "N"),
                                                             .init("fps", value: "N")],
                                                     command: "preview")
            if parsed.help {
                write(usage + "\n", to: 1)
                return ExitCode.success.rawValue
            }
            address = try ListenAddress(parsed.localValue("listen") ?? ListenAddress.defaultText)
            let allowRemote = parsed.localValue("allow-remote") == "true"
            let fps = try number(parsed.localValue("fps"), "--fps", default: 5, 1...30)
            let maxClients = try number(parsed.localValue("max-clients"), "--max-clients", default: 4, 1...32)
            var token: PreviewToken?
            if !address.isLoopback {
                guard allowRemote else {
                    throw UsageError("--listen \(address) is not a loopback address: use an SSH tunnel "
                                     + "(ssh -L 8470:127.0.0.1:8470 pi@kiosk) or --allow-remote with --token-file")
                }
            }
            if allowRemote || parsed.localValue("token-file") != nil {
                guard let file = parsed.localValue("token-file") else {
                    throw UsageError("--allow-remote needs --token-file FILE (the token every request must carry)")
                }
                token = try PreviewToken(file: file)
            }
            socket = try StatusCommand.socketPath(parsed)
            options = PreviewServer.Options(fps: fps, maxClients: maxClients, token: token,
                                            limits: .init(connectionLimit: connectionLimit, timeoutSeconds: connectionTimeoutSeconds,
                                                          memoryLimit: connectionMemoryLimit))
        } catch {
            write("scangate preview: \(Logger.escapeControls(error.message))\n", to: 2)
            return ExitCode.usage.rawValue
        }

        let logger = Logger(level: .info)
        let stop: WakePipe
        let server: PreviewServer
        do throws(SystemError) {
            stop = try WakePipe(purpose: "preview stop")
            let fd = try address.bindListening()
            server = try PreviewServer(listenFD: fd, address: address.text, options: options, backend: backend(socket), logger: logger)
        } catch {
            write("scangate preview: cannot serve: \(error)\n", to: 2)
            return ExitCode.failure.rawValue
        }
        let signals = SignalHandlers()
        signals.on([SIGINT, SIGTERM]) { _ in _ = stop.signal() }
        do {
            try signals.start()
        } catch {
            server.stop()
            write("scangate preview: cannot wait for signals: \(error)\n", to: 2)
            return ExitCode.failure.rawValue
        }
        logger.notice("preview: serving http://\(address.text)/ (asking the daemon on \(socket); at most \(options.maxClients) streams "
                      + "at \(options.fps) fps\(options.token == nil ? "" : "; a token is needed"))")
        while !stop.wait(milliseconds: -1) {}
        logger.notice("preview: stopping")
        server.stop()
        signals.cancel()
        return ExitCode.success.rawValue
    }

    static func number(_ text: String?, _ flag: String, default value: Int, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("\(flag) \(Logger.escapeControls(text)): allowed \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// The daemon, asked over its status socket as `status` asks it.
    static func backend(_ socket: String) -> PreviewBackend {
        let snapshotBytes = (1 << 20) + StatusSnapshot.maxSide * StatusSnapshot.maxSide
        @Sendable func ask(_ request: String, maxBytes: Int = 1 << 20) -> Result<[UInt8], PreviewFailure> {
            StatusCommand.ask(socket, request: request, maxBytes: maxBytes).mapError { PreviewFailure($0.message) }
        }
        return PreviewBackend(
            frameJPEG: {
                ask("snapshot", maxBytes: snapshotBytes).flatMap { bytes in
                    do throws(UsageError) {
                        return .success(try SnapshotPicture(try StatusSnapshot(answer: bytes)).jpeg())
                    } catch {
                        return .failure(PreviewFailure(error.message))
                    }
                }
            },
            statusJSON: { ask("status") },
            viewJSON: {
                ask("snapshot", maxBytes: snapshotBytes).map { bytes in
                    bytes.firstIndex(of: 0x0A).map { Array(bytes[...$0]) } ?? bytes
                }
            },
            ask: { ask($0) })
    }

    private static func write(_ text: String, to fd: Int32) {
        _ = FileDescriptor(rawValue: fd).writeAll(Array(text.utf8))
    }
}

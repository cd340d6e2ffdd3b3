import Config
import Core
import Images
import Platform
import Service
import Settings
#if canImport(Glibc)
import Glibc
#endif

/// `scangate status [--json | --snapshot FILE.png|- | --controls | --control NAME=VALUE [--save]] [--config FILE]
/// [--status-socket PATH]`: asks the running daemon over its status socket and prints a summary (or the JSON
/// document), writes the newest frame with the decoder's view drawn on it, or lists or tries the camera's
/// controls (and writes a tried one into the config). No daemon: one line on stderr and exit 1.
public enum StatusCommand {
    public static let usage = """
        usage: scangate status [--json | --snapshot FILE.png|- | --controls | --control NAME=VALUE [--save]]
                               [--config FILE] [--status-socket PATH]

        Asks the running daemon how it is doing: status, uptime, frames, reads, rejected reads by
        reason, the status lists in force (their iat, age and exp), drops, each device's health with
        its last error, the controller link, the MQTT link and its spool, and what the camera sees
        (the newest frame's mean luma, histogram and sharpness, the frame rate, the codes in view).
          --json                print the daemon's JSON document as it is (the figures: "view")
          --snapshot FILE.png   write the camera's newest frame as a PNG with the decoder's view drawn
                                on it: each code's corners outlined in red, and below the frame a panel
                                with the brightness histogram (a yellow mark at the mean). For aiming
                                and focusing the camera; the daemon keeps scanning.
          --snapshot -          draw it in the terminal instead (downscaled), with the figures and each
                                code's corners and payload (a signed pass: its fingerprint only)
          --controls            list the controls of the camera the daemon has open (exposure, gain,
                                focus, brightness, ...): type, min, max, step, default and current value
          --control NAME=VALUE  set a control on the running daemon's camera (names as --controls and
                                v4l2-ctl write them) and print the value read back; the daemon keeps it
                                until it restarts or its camera settings change, and sets it again
                                when the camera is reopened after a loss
          --save                with --control, after it took: write camera-control = NAME=VALUE into
                                [camera] of the config file (replacing the line for that control;
                                other lines and comments stay), atomically
          --config FILE         the daemon's config file: its status-socket is the one asked, and
                                --save writes to it (default \(ConfigFile.defaultPath) when it exists)
          --status-socket PATH  the daemon's status socket, as status-socket in the file (overrides
                                --config; --socket is the older name). Default here, and for auto:
                                \(StatusSocket.defaultPath()); that is $RUNTIME_DIRECTORY/status.sock
                                when set, else /run/scangate/status.sock
          -h, --help            show this help
        Exit 0 when the daemon answered; 1 when no daemon runs, it cannot be asked or has no frame yet;
        2 for a bad flag, config file or a FILE that cannot be written, and when the daemon refuses a
        control (no such control, a value out of range, a source without controls).
        """

    public static func run(_ args: [String]) -> Int32 {
        let json: Bool
        let snapshot: String?
        let controlsRequest: ControlsRequest?
        let path: String
        do throws(UsageError) {
            let parsed = try CommandLineParser.parse(args, table: OptionTable.service.filter { $0.name == "status-socket" },
                                                     aliases: ["socket": "status-socket"],
                                                     local: [.init("json"), .init("snapshot", value: "FILE.png, or - for the terminal"),
                                                             .init("controls"), .init("control", value: "NAME=VALUE"), .init("save")],
                                                     command: "status")
            if parsed.help {
                write(usage + "\n", to: 1)
                return ExitCode.success.rawValue
            }
            json = parsed.localValue("json") == "true"
            snapshot = parsed.localValue("snapshot")
            // The daemon's resolution: defaults, then the file (the packaged service's when it exists and
            // no other is given, as check-config reads it), then the flags.
            let configPath = parsed.configPath ?? (access(ConfigFile.defaultPath, F_OK) == 0 ? ConfigFile.defaultPath : nil)
            controlsRequest = try ControlsRequest(list: parsed.localValue("controls") == "true", control: parsed.localValue("control"),
                                                  save: parsed.localValue("save") == "true", configPath: configPath)
            let asked = [json ? "--json" : nil, snapshot.map { _ in "--snapshot" }, controlsRequest?.flag].compactMap { $0 }
            if asked.count > 1 { throw UsageError(asked.joined(separator: " and ") + " are asked one at a time") }
            if let snapshot, snapshot != "-" { try checkWritable(snapshot) }
            path = try socketPath(parsed)
        } catch {
            write("scangate status: \(Logger.escapeControls(error.message))\n", to: 2)
            return ExitCode.usage.rawValue
        }
        if let snapshot { return writeSnapshot(to: snapshot, socket: path) }
        if let controlsRequest { return controlsRequest.run(socket: path) }
        let answer: [UInt8]
        switch ask(path) {
        case .success(let bytes): answer = bytes
        case .failure(let message):
            write("scangate status: \(message.message)\n", to: 2)
            return ExitCode.nothingFound.rawValue
        }
        if json {
            write(String(decoding: answer, as: UTF8.self), to: 1)
            return ExitCode.success.rawValue
        }
        do throws(UsageError) {
            write(summary(try StatusReport(json: answer)), to: 1)
            return ExitCode.success.rawValue
        } catch {
            write("scangate status: \(error)\n", to: 2)
            return ExitCode.nothingFound.rawValue
        }
    }

    struct Failure: Error { let message: String }

    /// The status socket the daemon answers on, resolved as the daemon resolves it: defaults, then the
    /// file (the packaged service's when it exists and no other is given, as check-config reads it),
    /// then the flags. `status` and `preview` ask it.
    static func socketPath(_ parsed: CommandLineParser.Result) throws(UsageError) -> String {
        let configPath = parsed.configPath ?? (access(ConfigFile.defaultPath, F_OK) == 0 ? ConfigFile.defaultPath : nil)
        let socket: String
        do throws(UsageError) {
            socket = try Configuration.resolve(configPath: configPath, flagAssignments: parsed.assignments).service.statusSocket
        } catch {
            throw UsageError(parsed.spelledAsTyped(error.message))
        }
        switch socket {
        case "auto": return StatusSocket.defaultPath()
        case "off":
            let given = parsed.assignments.isEmpty ? configPath.map { "in \($0)" } ?? "" : "on the command line"
            throw UsageError("status-socket is off \(given): the daemon has no status socket to ask (set status-socket = auto)")
        default: return socket
        }
    }

    /// A snapshot file must be one that can be written: not a directory, in a directory that exists.
    static func checkWritable(_ file: String) throws(UsageError) {
        guard !file.isEmpty else { throw UsageError("--snapshot needs a file name (FILE.png, or - for the terminal)") }
        var info = stat()
        if stat(file, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw UsageError("cannot write \(file): it is a directory")
        }
        let directory = FilePath.parent(of: file)
        if stat(directory, &info) != 0 {
            throw UsageError("cannot write \(file): \(directory): \(Errno.current)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw UsageError("cannot write \(file): \(directory) is not a directory") }
        guard access(directory, W_OK) == 0 else { throw UsageError("cannot write \(file): \(directory): \(Errno.current)") }
    }

    /// Asks for a snapshot and writes it as a PNG (or terminal art for "-").
    static func writeSnapshot(to file: String, socket path: String) -> Int32 {
        let shot: StatusSnapshot
        switch ask(path, request: "snapshot", maxBytes: (1 << 20) + StatusSnapshot.maxSide * StatusSnapshot.maxSide) {
        case .success(let bytes):
            do throws(UsageError) {
                shot = try StatusSnapshot(answer: bytes)
            } catch {
                write("scangate status: \(path): \(Logger.escapeControls(error.message))\n", to: 2)
                return ExitCode.nothingFound.rawValue
            }
        case .failure(let failure):
            write("scangate status: \(failure.message)\n", to: 2)
            return ExitCode.nothingFound.rawValue
        }
        if file == "-" {
            let columns = getenv("COLUMNS").flatMap { Int(String(cString: $0)) }.map { max(16, min(240, $0)) } ?? 80
            let lines = SnapshotPicture.terminal(shot, columns: columns, ansiColours: isatty(1) == 1)
            write(lines.joined(separator: "\n") + "\n", to: 1)
            return ExitCode.success.rawValue
        }
        do throws(UsageError) {
            try FileBytes.write(try SnapshotPicture(shot).png(), to: file)
        } catch {
            write("scangate status: \(Logger.escapeControls(error.message))\n", to: 2)
            return ExitCode.usage.rawValue
        }
        return ExitCode.success.rawValue
    }

    /// Connects, sends `request`, reads the answer (at most `maxBytes`, 5 s).
    static func ask(_ path: String, request: String = "status", maxBytes: Int = 1 << 20) -> Result<[UInt8], Failure> {
        guard path.utf8.count < 100 else { return .failure(Failure(message: "the socket path \(path) is too long")) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure(message: "socket: \(Errno.current)")) }
        defer { close(fd) }
        let rc = StatusSocketAddress.with(path) { connect(fd, $0, $1) }
        if rc != 0 {
            let e = Errno.current
            switch e.rawValue {
            case ENOENT, ECONNREFUSED:
                return .failure(Failure(message: "nothing answers on \(path) (is scangate run running with this status-socket?)"))
            case EACCES, EPERM:
                return .failure(Failure(message: "cannot connect to \(path): \(e); run as root or as a member of group scangate"))
            default:
                return .failure(Failure(message: "cannot connect to \(path): \(e)"))
            }
        }
        let descriptor = FileDescriptor(rawValue: fd)
        guard case .success = descriptor.writeAll(Array((request + "\n").utf8)) else {
            return .failure(Failure(message: "the daemon on \(path) closed the connection: \(Errno.current)"))
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = MonotonicInstant.now().adding(milliseconds: 5000)
        while answer.count <= maxBytes {
            let left = Int32(max(0, deadline.milliseconds(since: .now())))
            guard left > 0, case .success(let events) = descriptor.poll(Int16(POLLIN), timeoutMilliseconds: left), events != 0 else {
                return .failure(Failure(message: "the daemon on \(path) did not answer within 5 s"))
            }
            switch buffer.withUnsafeMutableBytes({ descriptor.read(into: $0) }) {
            case .success(0):
                guard !answer.isEmpty else { return .failure(Failure(message: "the daemon on \(path) closed the connection without an answer")) }
                return .success(answer)
            case .success(let n): answer += buffer[0..<n]
            case .failure(let e): return .failure(Failure(message: "reading from \(path): \(e)"))
            }
        }
        return .failure(Failure(message: "the daemon's answer on \(path) is longer than \(maxBytes) bytes"))
    }

    /// The readable summary.
    static func summary(_ r: StatusReport) -> String {
        var lines = ["scangate \(r.version), pid \(r.pid): \(r.status), up \(duration(r.uptimeSeconds))"]
        lines.append("frames: \(r.frames.captured) captured, \(r.frames.decoded) decoded, \(r.frames.dropped) dropped")
        var reads = "reads: \(r.reads.reported) (\(r.reads.rejected) rejected)"
        if let last = r.reads.lastAt { reads += ", last at \(WallClock.rfc3339(nanoseconds: last))" }
        lines.append(reads)
        if !r.rejections.isEmpty {
            lines.append("rejected by reason: " + r.rejections.map { "\(Logger.escapeControls($0.name)) \($0.count)" }.joined(separator: ", "))
        }
        let now = WallClock.nowNanoseconds() / 1_000_000_000
        for l in r.statusLists {
            let expiry = l.expiresAt > now ? "in \(duration(Double(l.expiresAt - now)))" : "expired \(duration(Double(now - l.expiresAt))) ago"
            lines.append("status list \(Logger.escapeControls(l.uri)): \(l.entries) entries, iat \(time(l.issuedAt)) (\(duration(Double(max(0, now - l.issuedAt)))) old), "
                         + "exp \(time(l.expiresAt)) (\(expiry))\(l.kept ? ", the kept copy" : "")")
        }
        if let p = r.sitePolicy {
            let expiry = p.expiresAt > now ? "in \(duration(Double(p.expiresAt - now)))" : "expired \(duration(Double(now - p.expiresAt))) ago"
            lines.append("site policy ver \(p.version): iat \(time(p.issuedAt)) (\(duration(Double(max(0, now - p.issuedAt)))) old), "
                         + "exp \(time(p.expiresAt)) (\(expiry))\(p.kept ? ", the kept copy" : "")")
        }
        if let p = r.passbackSharing {
            lines.append("anti-passback over MQTT: \(p.view == "shared" ? "shared with the site" : "broker away, this kiosk's own view decides"); "
                         + "\(p.sent) uses sent, \(p.received) received (\(p.applied) newer than ours)"
                         + (p.waiting > 0 ? ", \(p.waiting) waiting for the broker" : "") + (p.dropped > 0 ? ", \(p.dropped) lost (over the bound)" : ""))
        }
        let drops = r.drops.filter { $0.count > 0 }
        lines.append("drops: " + (drops.isEmpty ? "none" : drops.map { "\($0.name) \($0.count)" }.joined(separator: ", ")))
        if !r.devices.isEmpty {
            let width = min(16, r.devices.map(\.name.count).max() ?? 0)
            lines.append("devices:")
            for d in r.devices {
                var line = "  " + d.name.padding(width) + " " + d.state.rawValue.padding(8) + " " + Logger.escapeControls(d.detail)
                if d.sent > 0 || d.errors > 0 { line += " (sent \(d.sent), errors \(d.errors))" }
                lines.append(line)
                if !d.alarms.isEmpty {
                    lines.append("  " + "".padding(width) + " alarms: "
                                 + d.alarms.map { "\(Logger.escapeControls($0.name)) \($0.active ? "ACTIVE" : "normal")" }.joined(separator: ", "))
                }
                if let e = d.lastError {
                    let when = d.lastErrorAt.map { " at " + WallClock.rfc3339(nanoseconds: $0) } ?? ""
                    lines.append("  " + "".padding(width) + " last error\(when): " + Logger.escapeControls(e))
                }
            }
        }
        if let v = r.view {
            let rate = v.framesPerSecond.map { JSONText.number($0, decimals: 1) + " fps" } ?? "fps not yet known"
            lines.append("view: frame \(v.frame), \(v.width)x\(v.height), \(rate); mean luma \(JSONText.number(v.figures.meanLuma, decimals: 1)), "
                         + "sharpness \(JSONText.number(v.figures.sharpness, decimals: 0)); \(v.codes.count) code\(v.codes.count == 1 ? "" : "s") in view "
                         + "(scangate status --snapshot - shows it)")
        }
        if let c = r.controller {
            lines.append("controller: \(c.name) \(c.online ? "online" : "offline") (\(Logger.escapeControls(c.detail)))")
        }
        if let m = r.mqtt {
            lines.append("mqtt: \(m.connected ? "connected" : "not connected") (\(Logger.escapeControls(m.detail))); "
                         + "spool \(m.spoolEvents) events (\(m.spoolBytes) bytes), \(m.dropped) dropped"
                         + (m.droppedNoSpace > 0 ? " (\(m.droppedNoSpace) for lack of disk space)" : ""))
        } else {
            lines.append("mqtt: off")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Seconds since the epoch as RFC 3339; "?" for a number no clock shows (the answer is not trusted).
    static func time(_ seconds: Int64) -> String {
        guard seconds >= 0, seconds < 253_402_300_800 else { return "?" }
        return WallClock.rfc3339(nanoseconds: seconds * 1_000_000_000)
    }

    static func duration(_ seconds: Double) -> String {
        // Whatever answers on the socket is not trusted to send a sane number: no trap on 1e300 or NaN.
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "? s" }
        let s = Int(seconds)
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        if s < 86400 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        return "\(s / 86400) d \(s % 86400 / 3600) h"
    }

    private static func write(_ text: String, to fd: Int32) {
        _ = FileDescriptor(rawValue: fd).writeAll(Array(text.utf8))
    }
}

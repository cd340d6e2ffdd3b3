import Config
import Core
import Platform
import Service

extension StatusCommand {
    /// `status --controls`, `status --control NAME=VALUE [--save]`: the running daemon's camera controls.
    struct ControlsRequest {
        enum Kind { case list, set(name: String, value: Int) }
        let kind: Kind
        /// The config file --save writes (nil: no --save).
        let saveTo: String?

        /// nil when none of the three flags is given. Bad combinations and a config --save cannot write
        /// are `UsageError`s (checked before the daemon is asked, so nothing is tried that cannot be saved).
        init?(list: Bool, control: String?, save: Bool, configPath: String?) throws(UsageError) {
            if list && control != nil { throw UsageError("--controls and --control are asked one at a time") }
            if save && control == nil { throw UsageError("--save goes with --control NAME=VALUE (it writes the value tried)") }
            if let control {
                let parts = control.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
                guard parts.count == 2, !parts[0].isEmpty, !parts[0].contains(" "), !parts[0].contains(","),
                      let value = Int(parts[1]) else {
                    throw UsageError("--control '\(control)' is not NAME=INTEGER (names as `scangate status --controls` lists them)")
                }
                kind = .set(name: parts[0], value: value)
            } else if list {
                kind = .list
            } else {
                return nil
            }
            if save {
                guard let configPath else {
                    throw UsageError("--save needs the daemon's config file: give --config FILE (\(ConfigFile.defaultPath) does not exist)")
                }
                if let problem = ConfigControlLine.problem(writing: configPath) { throw UsageError("--save: " + problem) }
                saveTo = configPath
            } else {
                saveTo = nil
            }
        }

        var flag: String {
            switch kind {
            case .list: return "--controls"
            case .set: return "--control"
            }
        }

        /// Asks the daemon, prints the answer; exit 0, 1 (no daemon), or 2 (the daemon refused; a file not written).
        func run(socket path: String) -> Int32 {
            let request: String
            switch kind {
            case .list: request = "controls"
            case .set(let name, let value): request = "control \(name)=\(value)"
            }
            let answer: [UInt8]
            switch StatusCommand.ask(path, request: request) {
            case .success(let bytes): answer = bytes
            case .failure(let failure):
                StatusCommand.printLine("scangate status: \(failure.message)", to: 2)
                return ExitCode.nothingFound.rawValue
            }
            do throws(UsageError) {
                switch kind {
                case .list:
                    let readings = try CameraControlRequests.readings(answer: answer)
                    StatusCommand.printLine(Self.table(readings), to: 1)
                case .set(_, let value):
                    let (key, read) = try CameraControlRequests.setting(answer: answer)
                    StatusCommand.printLine("\(key) = \(read.map { String($0) } ?? "unreadable") (read back; asked \(value))", to: 1)
                    if let saveTo {
                        try ConfigControlLine.write(key, to: value, file: saveTo)
                        StatusCommand.printLine("saved: camera-control = \(key)=\(value) in [camera] of \(saveTo)", to: 1)
                    }
                }
                return ExitCode.success.rawValue
            } catch {
                StatusCommand.printLine("scangate status: \(Logger.escapeControls(error.message))", to: 2)
                return ExitCode.usage.rawValue
            }
        }

        /// One control a line: "brightness (int): min 0 max 255 step 1 default 128 current 128".
        static func table(_ readings: [CameraControlReading]) -> String {
            guard !readings.isEmpty else { return "the camera offers no controls that take a value" }
            return readings.map { "\(Logger.escapeControls($0.key)) (\(Logger.escapeControls($0.type))): \($0.rangeText)" }
                .joined(separator: "\n")
        }
    }

    static func printLine(_ text: String, to fd: Int32) {
        _ = FileDescriptor(rawValue: fd).writeAll(Array((text + "\n").utf8))
    }
}

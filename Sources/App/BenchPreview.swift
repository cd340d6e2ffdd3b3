import Bench
import Core
import Pipeline
import Platform
import Service
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `bench`'s row for issue 26: decoding with a `scangate preview` client watching vs unwatched. The
/// pipeline feeds a LiveView as the daemon's does, a status socket serves its snapshots, and while
/// "watched" a thread pulls what one preview stream pulls at the default cap (5 frames a second): a
/// snapshot over the socket, drawn and encoded as a JPEG (the preview process's own work, here in the
/// same process, so the figure is if anything pessimistic). Rounds alternate; the best of each counts.
enum BenchPreview {
    struct Result {
        var offFPS: Double
        var onFPS: Double
        var pulls: Int
        var ratio: Double { onFPS / offFPS }
    }

    static func decodeThroughput(frames: [Frame], rounds: Int, progress: @escaping @Sendable (String) -> Void) throws -> Result {
        var dirTemplate = Array("/tmp/scangate-bench-preview-XXXXXX".utf8CString)
        guard let made = mkdtemp(&dirTemplate) else { throw SystemError("mkdtemp", "/tmp/scangate-bench-preview-XXXXXX", .current) }
        let dir = String(cString: made)
        let path = dir + "/status.sock"
        defer { rmdir(dir) }
        let liveView = LiveView()
        let telemetry = DaemonTelemetry(status: StatusBoard(logger: Logger(level: .error)), camera: "bench", outputs: { [] }, liveView: liveView)
        let socket = try StatusSocket(path: path, group: nil, provider: { telemetry.statusReport() },
                                      snapshot: { telemetry.snapshot() }, logger: Logger(level: .error))
        defer { socket.close() }
        let frameJPEG = PreviewCommand.backend(path).frameJPEG

        var one = Benchmarks.Options()
        one.rounds = 1
        let bench = Benchmarks(options: one)
        var off = 0.0, on = 0.0
        let pulls = Atomic<Int>(0)
        for round in 0..<rounds {
            progress("throughput with a preview client watching / not, round \(round + 1)/\(rounds)")
            off = max(off, try bench.throughput(frames: frames, liveView: liveView).daemonFPS)
            let stop = try WakePipe(purpose: "bench preview")
            let watcher = try PosixThread(name: "bench-preview") {
                // One stream at 5 fps: a frame every 200 ms, until the run ends.
                repeat {
                    if case .success = frameJPEG() { pulls.add(1, ordering: .relaxed) }
                } while !stop.wait(milliseconds: 200)
            }
            let watched = Swift.Result<Double, any Error> { try bench.throughput(frames: frames, liveView: liveView).daemonFPS }
            stop.signal()
            watcher.join()
            on = max(on, try watched.get())
        }
        return Result(offFPS: off, onFPS: on, pulls: pulls.load(ordering: .relaxed))
    }
}

import Bench
import Soak
import Core
import Images
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// `scangate soak [--frames N]`: a long replay with codes appearing and leaving, checked against the scenario.
enum SoakCommand {
    static let help = """
        Usage: scangate soak [--frames N] [--json]

        Renders a 300-frame scenario (four code appearances) to a Y4M file, replays it in a loop through
        `scangate run --fast --loop` for N frames (default 1000000), and checks: every expected code
        reported exactly once per pass and in order, RSS growth < 1 MiB, open descriptors constant.
        Exit 0 when all hold, 1 otherwise, 2 on a bad flag.
        """

    static func run(_ arguments: [String]) -> Int32 {
        var frames = 1_000_000
        var json = false
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let a = args.next() {
                switch a {
                case "-h", "--help": print(help); return 0
                case "--json": json = true
                case "--frames": frames = try args.number(a, 300...100_000_000)
                default: throw UsageError("unknown option \(a) (see scangate soak --help)")
                }
            }
        } catch {
            return usageError(error.message)
        }
        do {
            let scenario = try BenchCommand.writeTemporary(BenchFrames.traffic, name: "soak.scenario")
            let y4m = scenario.replacingSuffix(".scenario", with: ".y4m")
            defer { unlink(scenario); unlink(y4m) }
            let rendered = try BenchFrames.render(BenchFrames.traffic, name: "soak")
            let writer = try Y4MWriter(path: y4m, width: 640, height: 480, fps: 15)
            for f in rendered { try writer.write(luma: f.luma) }
            writer.close()
            let progress = ProgressLine()
            let r = try Soak.run(executable: try DaemonProcess.selfExecutable(), y4mPath: y4m, frames: frames) { m in
                progress.show(m)
            }
            progress.finish()
            if json {
                print("{\"frames\":\(r.frames),\"seconds\":\(fmt(r.seconds, 1)),\"rss_start_mib\":\(fmt(r.startMiB, 2)),"
                      + "\"rss_end_mib\":\(fmt(r.endMiB, 2)),\"rss_max_mib\":\(fmt(r.maxMiB, 2)),"
                      + "\"descriptors_start\":\(r.descriptorsStart),\"descriptors_end\":\(r.descriptorsEnd),"
                      + "\"events\":\(r.events),\"expected_events\":\(r.expectedEvents),\"mismatches\":\(r.mismatches.count),"
                      + "\"passed\":\(r.passed)}")
            } else {
                print("soak: \(r.frames) frames in \(fmt(r.seconds, 1)) s (exit \(r.exitStatus))")
                print("  events: \(r.events) reported, \(r.expectedEvents) expected, \(r.mismatches.count) mismatches")
                for m in r.mismatches { print("    " + m) }
                print("  RSS: \(fmt(r.startMiB, 2)) MiB after warm-up, \(fmt(r.endMiB, 2)) MiB at the end (growth \(fmt(r.growthMiB, 2)) MiB, max \(fmt(r.maxMiB, 2)) MiB)")
                print("  open descriptors: \(r.descriptorsStart) -> \(r.descriptorsEnd)")
                print(r.passed ? "soak: passed" : "soak: FAILED")
            }
            return r.passed ? 0 : 1
        } catch let e as UsageError {
            return usageError(e.message)
        } catch {
            return usageError("\(error)")
        }
    }
}

extension String {
    func replacingSuffix(_ suffix: String, with new: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + new : self + new
    }
}

import Synchronization
import Bench
import Soak
import StillImages
import Wiegand
import Core
import Decoding
import Pipeline
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// `scangate bench`: the performance targets as ratios measured in one run.
enum BenchCommand {
    static let help = """
        Usage: scangate bench [--json] [--memory-frames N] [--rounds N] [--corpus DIR] [--live-frames DIR]
                              [--only live-frames|preview|credentials] [--decoders]

        Measures, on generated 640x480 frames, each figure next to its target:
          throughput   whole daemon (--fast) vs a bare zbar loop on the same frames   target >= 97%
          idle cost    CPU per frame on a static scene vs one full zbar pass          target <= 10%
          decoders     CPU per frame, empty / with a QR / with an inverted QR, of zbar and of zxing-cpp
                       with and without invert-retry, and their reads         target zxing <= 0.3x zbar
          first frame  a code appearing is read in the first frame it is in view (gating on)
          latency      frame dequeue -> outputs done, p50/p99, and beyond the frame's decode time (<= 2 ms)
          wiegand      the transmitter's pulse widths and bit intervals on an in-memory chip (20-100 us,
                       200 us-20 ms), min/p50/p99/max
          credentials  signed-pass verification per pass (JWT/CWT, Ed25519/ES256), p50/p99, beside one
                       full zbar pass (target p99 < 2 ms), a holder-bound presentation (pass + key-binding
                       JWT, target p99 < 0.1x a zbar pass), and a one-time consume (append + fdatasync)
          camera-tamper  one look of the scene watch at a frame, thread CPU p50/p99 beside one zbar pass
                       (target p99 < 2%; it looks every 200 ms on the capture thread)
          mqtt         event -> PUBACK p50/p99 against Debian's mosquitto on 127.0.0.1 (started here);
                       10,000 events with the broker down then up: spool and drain rates; decoding
                       throughput with an MQTT output on vs off                       target >= 97%
          osdp         OSDP POLL -> first reply byte on a pseudo-terminal, p50/p99/max, idle and while a
                       thread decodes frames with zbar                               target < 200 ms (spec)
          memory       RSS after N frames (default 100000) and its growth           target <= 25 MB, no growth
          start-up     process start -> first decoded code on stdout                  target <= 300 ms
          accuracy     decode-image on the real photos of --corpus DIR (default ../shared/corpus when it
                       exists): QR >= 100/104, 1D >= 205/259, misreads <= zbarimg's 6
          live-path    with --live-frames DIR (scripts/live-frames makes it; make bench passes it): zbar
          frames       as run configured it before, zxing-cpp 1.4 alone, and scangate's zxing path on each camera
                       frame, interleaved, --rounds times: reads per category, misreads, thread-CPU per
                       frame (empty scenes, frames with a code, all) and its ratio to zbar; zxing-cpp
                       3.1.1's reads beside them from DIR/reference.json (docs/live-path-frames.md)
        --only live-frames runs that stage alone; --only preview runs the "throughput with a preview
        client watching / not" row alone (decoding with scangate preview's stream pulling at 5 fps);
        --only credentials runs the decoders' rows and the signed-pass rows (passes, presentations,
        status lists) beside them.
        --decoders measures the decoders alone (a minute) and prints only their rows and the idle cost.
        A progress line goes to stderr (the stage, N/M, and its seconds); --json prints the same figures
        as one JSON object. Ctrl-C prints the figures measured so far and exits 130.
        Exit 0 when every target is met, 1 otherwise, 2 on a bad flag.
        """

    static func run(_ arguments: [String]) -> Int32 {
        var options = Benchmarks.Options()
        var json = false
        var corpus: String? = nil
        var liveFrames: String? = nil
        var onlyLiveFrames = false
        var onlyPreview = false
        var onlyCredentials = false
        var decodersOnly = false
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let a = args.next() {
                switch a {
                case "-h", "--help": print(help); return 0
                case "--json": json = true
                case "--decoders": decodersOnly = true
                case "--corpus": corpus = try args.value(a, "a DIR (the corpus with samples/)")
                case "--memory-frames": options.memoryFrames = try args.number(a, 1...10_000_000)
                case "--rounds": options.rounds = try args.number(a, 1...10_000_000)
                case "--live-frames": liveFrames = try args.value(a, "a DIR (scripts/live-frames prints it)")
                case "--only":
                    let stage = try args.value(a, "a stage (live-frames, preview or credentials)")
                    switch stage {
                    case "live-frames": onlyLiveFrames = true
                    case "preview": onlyPreview = true
                    case "credentials": onlyCredentials = true
                    default: throw UsageError("--only \(stage): the stages that run alone are live-frames, preview and credentials")
                    }
                default: throw UsageError("unknown option \(a) (see scangate bench --help)")
                }
            }
            if onlyLiveFrames, liveFrames == nil { throw UsageError("--only live-frames needs --live-frames DIR") }
        } catch {
            return usageError(error.message)
        }
        // The live-path frames are checked now, not minutes later when their stage comes.
        var frames: LiveFrames? = nil
        if let liveFrames {
            do throws(UsageError) {
                let set = try LiveFrameSet.load(directory: liveFrames)
                frames = LiveFrames(set: set, reference: try LiveFrameReference.load(directory: liveFrames, for: set))
            } catch {
                return usageError(error.message)
            }
        }
        // Ctrl-C (or SIGTERM) prints what was measured so far, then exits 130: a long run is not lost.
        let asJSON = json
        // A shell that started us in the background may have left SIGINT ignored; Ctrl-C must work here.
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        SignalHandlers.blockSignals()
        let progressLine = ProgressLine(interval: 5)
        let partial = PosixMutex<BenchReport>(BenchReport())
        let stage = PosixMutex<(name: String, since: MonotonicInstant)?>(nil)
        let signals = SignalHandlers()
        signals.on([SIGINT, SIGTERM]) { _ in
            progressLine.finish()
            let report = partial.withLock { $0 }
            let at = stage.withLock { $0?.name } ?? "the start"
            Logger.writeToStderr("bench: interrupted during \(at); \(report.rows.count) figures measured before it:")
            _ = FileDescriptor(rawValue: 1).writeAll(Array(((asJSON ? report.json() : report.table()) + "\n").utf8))
            _exit(130)
        }
        try? signals.start()
        // The line moves: the stage and its seconds, redrawn every second on a terminal.
        options.progress = { message in
            stage.withLock { $0 = (message, .now()) }
            progressLine.show("bench: \(message)")
        }
        let ticking = Atomic<Bool>(true)
        let ticker = try? PosixThread(name: "bench-progress") {
            while ticking.load(ordering: .relaxed) {
                sleepThread(milliseconds: 1000)
                guard let (name, since) = stage.withLock({ $0 }) else { continue }
                progressLine.show("bench: \(name), \(Int(MonotonicInstant.now().milliseconds(since: since) / 1000)) s")
            }
        }
        defer {
            ticking.store(false, ordering: .relaxed)
            ticker?.join()
            signals.cancel()
        }
        do {
            let record: (BenchReport) -> Void = { report in partial.withLock { $0 = report } }
            var report = BenchReport()
            if decodersOnly {
                report.rows = BenchDecoders.reportRows(try BenchDecoders.measure(rounds: options.rounds, progress: options.progress))
                report.rows.append(idleRow(try Benchmarks(options: options).idleCost(frames: BenchFrames.render(BenchFrames.idle, name: "idle"))))
            } else if onlyCredentials {
                // The signed-pass rows beside one zbar pass, measured in the same run.
                let decoders = try BenchDecoders.measure(rounds: options.rounds, progress: options.progress)
                options.progress("signed passes")
                report.rows += try benchCredentials().rows(zbarPassMilliseconds: decoders.rows.first?.emptyMs)
            } else if onlyPreview {
                report.rows.append(previewRow(try BenchPreview.decodeThroughput(frames: BenchFrames.render(BenchFrames.traffic, name: "traffic"),
                                                                                 rounds: options.rounds, progress: options.progress)))
            } else if onlyLiveFrames, let frames {
                try measureLiveFrames(frames, options: options, into: &report)
            } else {
                report = try measure(options, corpus: corpus ?? defaultCorpus(), liveFrames: frames, measured: record)
            }
            progressLine.finish()
            print(json ? report.json() : report.table())
            return report.allPassed ? 0 : 1
        } catch let e as UsageError {
            return usageError(e.message)
        } catch {
            return usageError("\(error)")
        }
    }

    static func previewRow(_ p: BenchPreview.Result) -> BenchReport.Row {
        .init(name: "throughput with a preview client watching / not",
              measured: "\(fmt(p.ratio * 100, 1))% (\(fmt(p.onFPS, 1)) / \(fmt(p.offFPS, 1)) fps, \(p.pulls) JPEG frames pulled)",
              target: ">= 97%", pass: p.ratio >= 0.97 && p.pulls > 0)
    }

    static func idleRow(_ idle: Benchmarks.Idle) -> BenchReport.Row {
        .init(name: "idle CPU per frame (gated daemon decoder) / one full zbar pass", measured: "\(fmt(idle.ratio * 100, 1))% (\(fmt(idle.gatedMs, 3)) / \(fmt(idle.fullPassMs, 2)) ms)",
              target: "<= 10%", pass: idle.ratio <= 0.10)
    }

    /// ../shared/corpus from the working directory, when it is there.
    static func defaultCorpus() -> String? {
        var info = stat()
        let path = "../shared/corpus/samples"
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR ? "../shared/corpus" : nil
    }

    /// Every figure, stage by stage; `measured` is given the report after each stage (for Ctrl-C).
    static func measure(_ options: Benchmarks.Options, corpus: String?, liveFrames: LiveFrames? = nil,
                        measured: (BenchReport) -> Void = { _ in }) throws -> BenchReport {
        let bench = Benchmarks(options: options)
        var report = BenchReport()
        let stages = 11 + (corpus == nil ? 0 : 1) + (liveFrames == nil ? 0 : 1)
        var done = 0
        func next(_ name: String) {
            measured(report)
            done += 1
            options.progress("\(done)/\(stages) \(name)")
        }
        next("throughput")
        let traffic = try BenchFrames.render(BenchFrames.traffic, name: "traffic")
        let idleFrames = try BenchFrames.render(BenchFrames.idle, name: "idle")

        let t = try bench.throughput(frames: traffic)
        report.rows.append(.init(name: "throughput: daemon / bare zbar loop", measured: "\(fmt(t.ratio * 100, 1))% (\(fmt(t.daemonFPS, 1)) / \(fmt(t.bareFPS, 1)) fps)",
                                 target: ">= 97%", pass: t.ratio >= 0.97))
        report.stages = [("capture", t.stages.capture.meanMilliseconds), ("handoff", t.stages.handoff.meanMilliseconds),
                         ("decode", t.stages.decode.meanMilliseconds), ("debounce", t.stages.debounce.meanMilliseconds),
                         ("outputs", t.stages.outputs.meanMilliseconds)]

        next("idle cost")
        let idle = try bench.idleCost(frames: idleFrames)
        report.rows.append(idleRow(idle))

        next("decoders")
        let decoders = try BenchDecoders.measure(rounds: options.rounds, progress: options.progress)
        report.rows += BenchDecoders.reportRows(decoders)

        next("first frame")
        let (first, cases) = try bench.firstFrameReads()
        report.rows.append(.init(name: "codes read on their first frame (gated)", measured: "\(first)/\(cases)",
                                 target: "all", pass: first == cases))

        next("latency")
        let lat = try bench.latency(frames: traffic)
        report.latency = lat.serial
        report.latencyGPIO = lat.gpio
        report.latencyExcess = lat.excess
        report.rows.append(.init(name: "serial frames / GPIO sets / events", measured: "\(lat.serialFrames)/\(lat.gpioSets)/\(lat.events)",
                                 target: "equal", pass: lat.serialFrames == lat.events && lat.gpioSets == lat.events))
        report.rows.append(.init(name: "latency p99 beyond the frame's decode", measured: "\(fmt(lat.excess.at(99), 3)) ms (p50 \(fmt(lat.excess.at(50), 3)))",
                                 target: "<= 2 ms", pass: lat.excess.count > 0 && lat.excess.at(99) <= 2))

        let scenarioPath = try writeTemporary(BenchFrames.traffic, name: "traffic.scenario")
        defer { unlink(scenarioPath) }
        next("memory (\(options.memoryFrames) frames)")
        let mem = try bench.memory(executable: try DaemonProcess.selfExecutable(), scenarioPath: scenarioPath)
        report.rows.append(.init(name: "daemon steady RSS, \(mem.frames) frames", measured: "\(fmt(mem.steadyMiB, 1)) MiB",
                                 target: "<= 25 MB", pass: mem.steadyMiB <= 25 * 1_000_000 / 1_048_576))
        report.rows.append(.init(name: "daemon RSS growth over those frames", measured: "\(fmt(mem.growthMiB, 2)) MiB",
                                 target: "none (< 1 MiB)", pass: mem.growthMiB < 1))
        report.rows.append(.init(name: "daemon open descriptors, start/end", measured: "\(mem.descriptorsFirst)/\(mem.descriptorsLast)",
                                 target: "equal", pass: mem.descriptorsFirst == mem.descriptorsLast))
        report.rows.append(.init(name: "codes reported in the memory run", measured: "\(mem.reported)/\(mem.expected)",
                                 target: "exactly", pass: mem.reported == mem.expected))

        next("Wiegand timing")
        let wiegand = try WiegandBench(frames: 20).run()
        report.rows.append(.init(name: "Wiegand pulse width (in-memory chip)",
                                 measured: wiegand.pulses?.description ?? "none sent",
                                 target: "20-100 us", pass: wiegand.pulses != nil && wiegand.pulsesOutOfSpec == 0))
        report.rows.append(.init(name: "Wiegand bit interval",
                                 measured: wiegand.intervals?.description ?? "none sent",
                                 target: "200-20000 us", pass: wiegand.intervals != nil && wiegand.intervalsOutOfSpec == 0))
        report.rows.append(.init(name: "Wiegand frames sent right to the bit", measured: "\(wiegand.framesSent)/\(wiegand.framesExpected)",
                                 target: "all", pass: wiegand.framesSent == wiegand.framesExpected))

        next("signed passes")
        let credentials = try benchCredentials()
        report.rows += credentials.rows(zbarPassMilliseconds: decoders.rows.first?.emptyMs)
        next("camera-tamper")
        report.rows.append(sceneWatchRow(frames: traffic, zbarPassMilliseconds: decoders.rows.first?.emptyMs))
        next("MQTT")
        let mqtt = try BenchMQTT.run()
        report.rows.append(.init(name: "MQTT event -> PUBACK, p50/p99 (loopback)",
                                 measured: "\(fmt(mqtt.latency.p50Milliseconds, 2))/\(fmt(mqtt.latency.p99Milliseconds, 2)) ms (\(mqtt.latency.samples.count) events)",
                                 target: "p99 <= 50 ms", pass: mqtt.latency.p99Milliseconds <= 50))
        let burst = mqtt.burst
        report.rows.append(.init(name: "MQTT \(burst.events) events, broker down: spool / drain",
                                 measured: "\(Int(burst.spoolEventsPerSecond)) ev/s (\(fmt(burst.spoolSeconds, 2)) s) / \(Int(burst.drainEventsPerSecond)) ev/s (\(fmt(burst.drainSeconds, 2)) s), reconnect \(fmt(burst.reconnectSeconds, 2)) s",
                                 target: "none lost", pass: burst.acknowledged >= burst.events && burst.dropped == 0))
        let withMQTT = try BenchMQTT.decodeThroughput(frames: traffic, rounds: options.rounds, progress: options.progress)
        report.rows.append(.init(name: "throughput with MQTT on / off",
                                 measured: "\(fmt(withMQTT.ratio * 100, 1))% (\(fmt(withMQTT.onFPS, 1)) / \(fmt(withMQTT.offFPS, 1)) fps, \(withMQTT.acknowledged)/\(withMQTT.reported) events acknowledged)",
                                 target: ">= 97%", pass: withMQTT.ratio >= 0.97 && withMQTT.acknowledged >= withMQTT.reported && withMQTT.reported > 0))
        report.rows.append(previewRow(try BenchPreview.decodeThroughput(frames: traffic, rounds: options.rounds, progress: options.progress)))
        next("OSDP reply time")
        // 200 polls every 50 ms (libosdp's CP polls that often), once idle and once while a thread decodes
        // the traffic frames with zbar (the decode queue's work beside the link thread).
        let osdpIdle = try BenchOSDP.pollLatency(polls: 200)
        report.rows += BenchOSDP.rows(osdpIdle, label: "idle")
        let osdpBusy = try BenchOSDP.pollLatency(polls: 200, decodeFrames: traffic)
        report.rows += BenchOSDP.rows(osdpBusy, label: "while decoding")

        next("start-up")
        let startup = try startupMilliseconds(rounds: options.rounds)
        report.rows.append(.init(name: "start-up to first decoded code", measured: "\(fmt(startup, 1)) ms",
                                 target: "<= 300 ms", pass: startup <= 300))
        if let corpus {
            next("accuracy on \(corpus)")
            let acc = measureAccuracy(corpus: corpus + "/samples")
            if let qr = acc.group("QR") {
                report.rows.append(.init(name: "real photos, QR read (decode-image)", measured: "\(qr.strict)/\(qr.cases), \(fmt(qr.msPerImage, 1)) ms/image",
                                         target: ">= 100/104", pass: qr.strict >= 100))
            }
            if let oneD = acc.group("1D") {
                report.rows.append(.init(name: "real photos, 1D read (decode-image)", measured: "\(oneD.strict)/\(oneD.cases), \(fmt(oneD.msPerImage, 1)) ms/image",
                                         target: ">= 205/259", pass: oneD.strict >= 205))
            }
            let misreads = acc.groups.filter { $0.name == "QR" || $0.name == "1D" }.map(\.misreads).reduce(0, +)
            report.rows.append(.init(name: "real photos, misreads", measured: "\(misreads)", target: "<= 6 (zbarimg)", pass: misreads <= 6))
        } else {
            report.rows.append(.init(name: "real photos (accuracy)", measured: "no corpus: --corpus DIR", target: "-", pass: nil))
        }
        if let liveFrames {
            next("live-path frames")
            try measureLiveFrames(liveFrames, options: options, into: &report)
        } else {
            report.rows.append(.init(name: "live-path frames (decoders side by side)", measured: "no frames: --live-frames DIR",
                                     target: "-", pass: nil))
        }
        report.figures = [("frames dropped (latency run, live 30 fps)", Double(lat.dropped)),
                          ("memory run seconds", mem.seconds),
                          ("OSDP polls answered, idle (of \(osdpIdle.polls))", Double(osdpIdle.replies)),
                          ("OSDP polls answered, while decoding (of \(osdpBusy.polls))", Double(osdpBusy.replies)),
                          ("OSDP: frames zbar decoded meanwhile", Double(osdpBusy.decodes)),
                          ("bare zbar ms/frame (traffic)", 1000 / t.bareFPS),
                          ("full zbar pass ms/frame (idle scene)", idle.fullPassMs)]
        return report
    }

    /// The live-path frames of `--live-frames DIR`, and the reference scorer's results when
    /// `DIR/reference.json` is there.
    struct LiveFrames {
        var set: LiveFrameSet
        var reference: LiveFrameReference?
    }

    /// The live-path frames scored by each decoder (BenchDecoder.standard, zbar first), with the reference
    /// scorer's column. The table goes in `report.liveFrames`; two rows sum it up (no target: the goals
    /// belong to issue 20's decoder).
    /// camera-tamper's look at a frame (on the capture thread, once per 200 ms of capture time), thread
    /// CPU per look on the traffic frames spaced 250 ms apart so that each is looked at, beside one zbar
    /// pass. Target: p99 under 2% of a zbar pass, so decoding is never slowed.
    static func sceneWatchRow(frames: [Frame], zbarPassMilliseconds zbar: Double?) -> BenchReport.Row {
        let watch = SceneWatch(afterSeconds: 10, darkLevel: 24, signal: CameraSceneSignal(), logger: Logger(level: .error, sink: { _ in }))
        var times: [Double] = []
        var n: UInt64 = 0
        for _ in 0..<5 {
            for f in frames {
                let frame = Frame(width: f.width, height: f.height, sequence: n, captureTime: MonotonicInstant(nanoseconds: n * 250_000_000),
                                  luma: f.luma)
                n += 1
                let t0 = BenchClock.threadCPUMilliseconds()
                watch.observe(frame)
                times.append(BenchClock.threadCPUMilliseconds() - t0)
            }
        }
        let p = Percentiles(times)
        let size = frames.first.map { "\($0.width)x\($0.height)" } ?? "no"
        let share = zbar.map { $0 > 0 ? " (\(fmt(100 * p.at(99) / $0, 2))% of a zbar pass)" : "" } ?? ""
        return .init(name: "camera-tamper: one look at a \(size) frame (every 200 ms, capture thread)",
                     measured: "p50 \(Int((p.at(50) * 1000).rounded())) us, p99 \(Int((p.at(99) * 1000).rounded())) us\(share)",
                     target: "p99 < 2% of a zbar pass", pass: zbar.map { $0 > 0 && p.at(99) < 0.02 * $0 })
    }

    static func measureLiveFrames(_ frames: LiveFrames, options: Benchmarks.Options, into report: inout BenchReport) throws {
        let bench = LiveFrameBench(repeats: options.rounds, progress: options.progress)
        let live = try bench.run(frames.set, decoders: try BenchDecoder.standard(), reference: frames.reference)
        report.liveFrames = live
        let summary = live.columns.map { "\($0.decoder) \($0.totalReads)" }.joined(separator: ", ")
        report.rows.append(.init(name: "live-path frames read, of \(live.framesWithCode)", measured: summary, target: "-", pass: nil))
        let misreads = live.columns.map(\.totalMisreads).reduce(0, +)
        report.rows.append(.init(name: "live-path frames: misreads, all decoders", measured: "\(misreads)", target: "-", pass: nil))
    }

    /// Spawns `scangate run --camera sim:STARTUP --oneshot` and times it until the first byte on stdout
    /// (the first decoded code); best of `rounds`.
    static func startupMilliseconds(rounds: Int) throws -> Double {
        var best = Double.infinity
        let exe = try DaemonProcess.selfExecutable()
        for _ in 0..<rounds {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw SystemError("pipe", "start-up bench", .current) }
            let t0 = BenchClock.wallMilliseconds()
            let child: ChildProcess
            do {
                child = try ChildProcess.spawn(exe, ["run", "--camera", "sim:STARTUP", "--oneshot", "--fps", "30"],
                                               stdout: .descriptor(fds[1]), stderr: .devNull, closeInChild: [fds[0]])
            } catch {
                close(fds[0])
                close(fds[1])
                throw error
            }
            close(fds[1])
            var byte: UInt8 = 0
            let n = read(fds[0], &byte, 1)
            let elapsed = BenchClock.wallMilliseconds() - t0
            close(fds[0])
            _ = child.wait()
            if n == 1 { best = min(best, elapsed) }
        }
        return best
    }

    static func writeTemporary(_ text: String, name: String) throws -> String {
        var template = Array("/tmp/scangate-bench-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw SystemError("mkdtemp", "/tmp", .current) }
        let path = String(cString: dir) + "/" + name
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC).get("open", path)
        defer { _ = fd.close() }
        _ = try fd.writeAll(Array(text.utf8)).get("write", path)
        return path
    }
}

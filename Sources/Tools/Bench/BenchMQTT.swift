import Core
import Dispatch
import MQTT
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// MQTT figures for `scangate bench`, against Debian's mosquitto started here on 127.0.0.1:
/// - event -> PUBACK latency on loopback (report() to the broker's acknowledgement, which includes the
///   spool's write + fdatasync), p50 and p99;
/// - a burst with the broker down, then up: how fast the spool takes events, how long until the
///   session reconnects (its backoff), and how long the spool takes to drain.
public enum BenchMQTT {
    public struct Latency: Sendable {
        public var samples: Percentiles
        public var p50Milliseconds: Double { samples.at(50) }
        public var p99Milliseconds: Double { samples.at(99) }
    }

    public struct Burst: Sendable {
        public var events: Int
        /// From the first report() until every event was durable in the spool.
        public var spoolSeconds: Double
        public var spoolEventsPerSecond: Double { Double(events) / max(spoolSeconds, 1e-9) }
        /// From the broker's start until the session was connected again (bounded by the backoff).
        public var reconnectSeconds: Double
        /// From the reconnection until the spool was empty (every event acknowledged).
        public var drainSeconds: Double
        public var drainEventsPerSecond: Double { Double(events) / max(drainSeconds, 1e-9) }
        public var acknowledged: Int
        public var dropped: UInt64
    }

    public struct Report: Sendable {
        public var latency: Latency
        public var burst: Burst
        public var spoolDirectory: String

        public var lines: [String] {
            [
                "mqtt event -> PUBACK on loopback (\(latency.samples.count) events, spool fdatasync included): "
                    + "p50 \(Report.fixed(latency.p50Milliseconds, 2)) ms, p99 \(Report.fixed(latency.p99Milliseconds, 2)) ms",
                "mqtt burst of \(burst.events) events with the broker down: spooled at \(Int(burst.spoolEventsPerSecond)) events/s "
                    + "(\(Report.fixed(burst.spoolSeconds, 2)) s); reconnected \(Report.fixed(burst.reconnectSeconds, 2)) s after the broker started; "
                    + "drained in \(Report.fixed(burst.drainSeconds, 2)) s (\(Int(burst.drainEventsPerSecond)) events/s); "
                    + "\(burst.acknowledged) acknowledged, \(burst.dropped) dropped",
            ]
        }

        static func fixed(_ v: Double, _ decimals: Int) -> String {
            var scale = 1.0
            for _ in 0..<decimals { scale *= 10 }
            return String((v * scale).rounded() / scale)
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs both measurements. `spoolParent`: where the spools are made (the kiosk's real disk gives the
    /// real fdatasync cost; the default is a temporary directory).
    public static func run(latencySamples: Int = 500, burstEvents: Int = 10_000, spoolParent: String? = nil,
                           broker: String = "/usr/sbin/mosquitto") throws -> Report {
        let parent = try spoolParent ?? makeTemporaryDirectory()
        defer {
            removeTree(parent + "/latency-spool")
            removeTree(parent + "/burst-spool")
            if spoolParent == nil { removeTree(parent) }
        }
        let latency = try pubackLatency(samples: latencySamples, spool: parent + "/latency-spool", broker: broker)
        let burst = try burstWithBrokerDown(events: burstEvents, spool: parent + "/burst-spool", broker: broker)
        return Report(latency: latency, burst: burst, spoolDirectory: parent)
    }

    /// One event at a time: report(), then wait for its PUBACK.
    public static func pubackLatency(samples: Int, spool: String, broker: String = "/usr/sbin/mosquitto") throws -> Latency {
        let b = try BenchBroker(executable: broker)
        try b.start()
        defer { b.stop() }
        let acked = DispatchSemaphore(value: 0)
        let (output, _) = try makeOutput(port: b.port, spool: spool) { n in for _ in 0..<n { acked.signal() } }
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        guard waitFor(seconds: 10, { output.link.connected }) else { throw Failure(description: "mqtt bench: the output did not connect to \(broker)") }
        var values: [Double] = []
        for i in 0..<(samples + 20) {
            let start = MonotonicInstant.now()
            output.report(event(seq: UInt64(i + 1)))
            guard acked.wait(timeout: .now() + .seconds(5)) == .success else {
                throw Failure(description: "mqtt bench: no PUBACK within 5 s for event \(i + 1)")
            }
            if i >= 20 { values.append(MonotonicInstant.now().milliseconds(since: start)) }   // the first 20 warm up
        }
        return Latency(samples: Percentiles(values))
    }

    /// `events` reported with no broker, then the broker started.
    public static func burstWithBrokerDown(events: Int, spool: String, broker: String = "/usr/sbin/mosquitto") throws -> Burst {
        let b = try BenchBroker(executable: broker)
        let counter = AckCounter()
        let (output, _) = try makeOutput(port: b.port, spool: spool) { n in counter.value.add(n, ordering: .relaxed) }
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let start = MonotonicInstant.now()
        for i in 0..<events { output.report(event(seq: UInt64(i + 1))) }
        guard waitFor(seconds: 120, { output.link.spool.records + output.link.dropped >= UInt64(events) }) else {
            throw Failure(description: "mqtt bench: the spool did not take \(events) events within 120 s")
        }
        let spooled = MonotonicInstant.now()
        try b.start()
        defer { b.stop() }
        guard waitFor(seconds: 120, { output.link.connected }) else { throw Failure(description: "mqtt bench: no reconnection within 120 s") }
        let connected = MonotonicInstant.now()
        guard waitFor(seconds: 300, { output.link.spool.records == 0 }) else {
            throw Failure(description: "mqtt bench: the spool did not drain within 300 s (\(output.link.spool.records) left)")
        }
        let drained = MonotonicInstant.now()
        return Burst(events: events, spoolSeconds: spooled.milliseconds(since: start) / 1000,
                     reconnectSeconds: connected.milliseconds(since: spooled) / 1000,
                     drainSeconds: drained.milliseconds(since: connected) / 1000,
                     acknowledged: counter.value.load(ordering: .relaxed), dropped: output.link.dropped)
    }

    /// Decoding with an MQTT output connected to a live broker against decoding without one, on the same
    /// frames: `rounds` alternating runs of each, best of each (the whole daemon, as `throughput`).
    public struct DecodeThroughput: Sendable {
        public var offFPS: Double
        public var onFPS: Double
        public var ratio: Double { onFPS / offFPS }
        /// Events the broker acknowledged during the MQTT-on runs (proof that they were published).
        public var acknowledged: Int
        public var reported: Int
    }

    public static func decodeThroughput(frames: [Frame], rounds: Int, decoderSettings: DecoderSettings = DecoderSettings(),
                                        progress: @escaping @Sendable (String) -> Void = { _ in },
                                        broker: String = "/usr/sbin/mosquitto") throws -> DecodeThroughput {
        let b = try BenchBroker(executable: broker)
        try b.start()
        defer { b.stop() }
        let parent = try makeTemporaryDirectory()
        defer { removeTree(parent + "/throughput-spool"); removeTree(parent) }
        let counter = AckCounter()
        let (output, _) = try makeOutput(port: b.port, spool: parent + "/throughput-spool") { n in
            counter.value.add(n, ordering: .relaxed)
        }
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        guard waitFor(seconds: 10, { output.link.connected }) else {
            throw Failure(description: "mqtt bench: the output did not connect to \(broker)")
        }
        var one = Benchmarks.Options()
        one.rounds = 1
        let bench = Benchmarks(options: one, decoderSettings: decoderSettings)
        var off = 0.0, on = 0.0
        let counting = CountingReport(inner: output)
        for round in 0..<rounds {
            progress("throughput with MQTT on/off, round \(round + 1)/\(rounds)")
            off = max(off, try bench.throughput(frames: frames).daemonFPS)
            on = max(on, try bench.throughput(frames: frames, alsoReportingTo: [counting]).daemonFPS)
        }
        let total = counting.count.load(ordering: .relaxed)
        // Every event published during the runs is acknowledged before the figures are final.
        guard waitFor(seconds: 60, { counter.value.load(ordering: .relaxed) >= total }) else {
            throw Failure(description: "mqtt bench: \(total - counter.value.load(ordering: .relaxed)) of \(total) events not acknowledged within 60 s")
        }
        return DecodeThroughput(offFPS: off, onFPS: on, acknowledged: counter.value.load(ordering: .relaxed), reported: total)
    }

    /// Counts what reaches the MQTT output (the pipeline's runs never close it: the bench does).
    final class CountingReport: ReportOutput {
        let inner: MQTTOutput
        let count = Atomic<Int>(0)
        var name: String { inner.name }
        init(inner: MQTTOutput) { self.inner = inner }
        func report(_ event: ReadEvent) { count.add(1, ordering: .relaxed); inner.report(event) }
        func close(deadline: MonotonicInstant) {}
    }

    final class AckCounter: Sendable {
        let value = Atomic<Int>(0)
    }

    static func makeOutput(port: Int, spool: String, onAcknowledged: @escaping @Sendable (Int) -> Void) throws -> (MQTTOutput, MosquittoLibrary) {
        let library = try MosquittoLibrary()
        var settings = MQTTSettings()
        settings.host = "127.0.0.1"
        settings.port = port
        settings.clientID = "bench"
        settings.spool = spool
        let configuration = try settings.resolve(hostName: "bench")
        let logger = Logger(level: .error)
        let output = try MQTTOutput(configuration: configuration, dependencies: MQTTOutputDependencies(
            library: library, eventLine: line, state: { MQTTState(status: .scanning, version: "bench", uptimeSeconds: 0) },
            logger: logger, onAcknowledged: onAcknowledged))
        return (output, library)
    }

    /// A stdout-like JSON line of about the size of a real one.
    @Sendable static func line(_ e: ReadEvent) -> String {
        JSONText.object([
            ("seq", String(e.seq)), ("time", JSONText.string(WallClock.rfc3339(nanoseconds: e.wallTimeNanoseconds))),
            ("symbology", JSONText.string(e.symbol.symbology.zbarName)),
            ("data", JSONText.string(String(decoding: e.symbol.data, as: UTF8.self))), ("frame", String(e.frame)),
            ("latency_ms", "3.2"), ("bounds", #"{"x":120,"y":80,"w":200,"h":200}"#),
        ])
    }

    static func event(seq: UInt64) -> ReadEvent {
        let now = MonotonicInstant.now()
        return ReadEvent(seq: seq, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                         symbol: DecodedSymbol(symbology: .qr, data: Array("https://example.org/pass/\(seq)-0123456789abcdef".utf8),
                                               bounds: Rect(x: 120, y: 80, w: 200, h: 200)),
                         frame: seq, dequeuedAt: now, emittedAt: now)
    }

    static func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
        while MonotonicInstant.now() < deadline {
            if condition() { return true }
            sleepThread(milliseconds: 2)
        }
        return condition()
    }

    /// Removes a directory the bench made, and what is in it (files and directories of files).
    static func removeTree(_ path: String) {
        for name in (try? Directory.entries(path)) ?? [] where unlink(path + "/" + name) != 0 { removeTree(path + "/" + name) }
        rmdir(path)
    }

    static func makeTemporaryDirectory() throws -> String {
        var template = Array("/tmp/scangate-bench-mqtt-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw SystemError("mkdtemp", "/tmp/scangate-bench-mqtt-XXXXXX", .current) }
        return String(cString: p)
    }
}

/// Debian's mosquitto on 127.0.0.1 on a free port, with a generated config, for the bench.
final class BenchBroker {
    let executable: String
    let port: Int
    let directory: String
    private var child: ChildProcess?

    init(executable: String) throws {
        guard access(executable, X_OK) == 0 else {
            throw BenchMQTT.Failure(description: "mqtt bench: \(executable) is missing (Debian package mosquitto)")
        }
        self.executable = executable
        directory = try BenchMQTT.makeTemporaryDirectory()
        port = try BenchBroker.freePort()
        let config = "listener \(port) 127.0.0.1\nallow_anonymous true\nuser root\nmax_queued_messages 100000\n"
        let fd = open(directory + "/mosquitto.conf", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError("open", directory + "/mosquitto.conf", .current) }
        _ = FileDescriptor(rawValue: fd).writeAll(Array(config.utf8))
        close(fd)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", "a free port", .current) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { s -> Int32 in
                bind(fd, s, length) == 0 ? getsockname(fd, s, &length) : -1
            }
        }
        guard rc == 0 else { throw SystemError("bind", "127.0.0.1:0", .current) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func start() throws {
        child = try ChildProcess.spawn(executable, ["-c", directory + "/mosquitto.conf"], stdout: .devNull, stderr: .devNull)
        let ready = BenchMQTT.waitFor(seconds: 10) { accepts() }
        guard ready else { throw BenchMQTT.Failure(description: "mqtt bench: \(executable) did not listen on 127.0.0.1:\(port)") }
    }

    func accepts() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    func stop() {
        guard let child else { return }
        child.signal(SIGTERM)
        _ = child.wait()
        self.child = nil
    }

    deinit {
        stop()
        BenchMQTT.removeTree(directory)
    }
}

import Core
import Dispatch
import Platform
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The numbers the metrics file shows; the daemon fills it (the provider closure) at integration.
public struct MetricsSnapshot: Sendable, Equatable {
    public struct ReadCount: Sendable, Equatable {
        public var symbology: String
        /// "accepted" or "rejected".
        public var verdict: String
        public var count: UInt64
        public init(symbology: String, verdict: String, count: UInt64) {
            self.symbology = symbology
            self.verdict = verdict
            self.count = count
        }
    }

    public struct OutputErrors: Sendable, Equatable {
        public var output: String
        public var count: UInt64
        public init(output: String, count: UInt64) {
            self.output = output
            self.count = count
        }
    }

    public var framesCaptured: UInt64 = 0
    public var framesDecoded: UInt64 = 0
    public var framesDropped: UInt64 = 0
    public var reads: [ReadCount] = []
    public var outputErrors: [OutputErrors] = []
    /// Each output's alarms (an OSDP reader's tamper switch and supply): 1 while active.
    public var alarms: [OutputAlarm] = []

    public struct OutputAlarm: Sendable, Equatable {
        public var output: String
        public var alarm: HealthAlarm
        public init(output: String, alarm: HealthAlarm) {
            self.output = output
            self.alarm = alarm
        }
    }
    public var decodeSeconds = MetricsHistogram.decodeTime()
    public var cameraUp = false
    /// nil: no output that talks to a controller (the gauge is left out).
    public var controllerOnline: Bool?
    /// nil: MQTT is off (its gauges are left out).
    public var mqttConnected: Bool?
    public var mqttSpoolEvents: UInt64?
    public var mqttSpoolDropped: UInt64?
    /// Of those, the events the spool's file system had no room for.
    public var mqttSpoolDroppedNoSpace: UInt64?
    /// Rejected reads by reason (a pass's refusal reason, or `payload-filter`).
    public var rejections: [StatusReport.Drop] = []
    /// The status lists in force (credential-status-list).
    public var statusLists: [StatusReport.StatusList] = []
    public var sitePolicy: StatusReport.SitePolicy? = nil
    /// nil: anti-passback is not shared over MQTT (its families are left out).
    public var passbackSharing: StatusReport.PassbackSharing? = nil
    /// False in the last file written at exit.
    public var up = true

    public init() {}
}

/// A histogram with fixed upper bounds (seconds), as Prometheus keeps one.
public struct MetricsHistogram: Sendable, Equatable {
    public let bounds: [Double]
    /// Observations per bucket (not cumulative); one more than `bounds` (the +Inf bucket).
    public private(set) var counts: [UInt64]
    public private(set) var sum: Double = 0

    public init(bounds: [Double]) {
        self.bounds = bounds.sorted()
        counts = [UInt64](repeating: 0, count: bounds.count + 1)
    }

    /// 1 ms to 1 s: zbar on a 640x480 frame takes about 10-30 ms on a Pi-class machine.
    public static func decodeTime() -> MetricsHistogram {
        MetricsHistogram(bounds: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1])
    }

    public mutating func observe(_ seconds: Double) {
        let i = bounds.firstIndex { seconds <= $0 } ?? bounds.count
        counts[i] += 1
        sum += seconds
    }

    public var count: UInt64 { counts.reduce(0, +) }
}

/// The Prometheus text exposition format (version 0.0.4), as the node exporter's textfile collector reads it.
public enum PrometheusText {
    /// A label value: backslash, double quote and line feed escaped.
    public static func escapeLabel(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// HELP text: backslash and line feed escaped.
    public static func escapeHelp(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    /// A sample value: integers as integers, others in Go's float syntax.
    static func value(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    struct Family {
        let name: String
        let help: String
        let type: String
        var samples: [(suffix: String, labels: [(String, String)], value: String)] = []
    }

    static func render(_ families: [Family]) -> String {
        var out = ""
        for f in families {
            out += "# HELP \(f.name) \(escapeHelp(f.help))\n# TYPE \(f.name) \(f.type)\n"
            for s in f.samples {
                out += f.name + s.suffix
                if !s.labels.isEmpty {
                    out += "{" + s.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                out += " " + s.value + "\n"
            }
        }
        return out
    }

    /// ScanGate's metrics.
    public static func render(_ m: MetricsSnapshot) -> String {
        func gauge(_ name: String, _ help: String, _ v: Double) -> Family {
            Family(name: name, help: help, type: "gauge", samples: [("", [], value(v))])
        }
        func counter(_ name: String, _ help: String, _ v: UInt64) -> Family {
            Family(name: name, help: help, type: "counter", samples: [("", [], String(v))])
        }
        var families: [Family] = [
            gauge("scangate_up", "1 while the daemon runs; 0 in the file it leaves at exit.", m.up ? 1 : 0),
            counter("scangate_frames_captured_total", "Frames the camera delivered.", m.framesCaptured),
            counter("scangate_frames_decoded_total", "Frames the decoder looked at.", m.framesDecoded),
            counter("scangate_frames_dropped_total", "Frames replaced by a newer one before they were decoded.", m.framesDropped),
        ]
        var reads = Family(name: "scangate_reads_total", help: "Reads reported, by symbology and verdict (accepted, rejected).", type: "counter")
        for r in m.reads { reads.samples.append(("", [("symbology", r.symbology), ("verdict", r.verdict)], String(r.count))) }
        families.append(reads)
        var rejected = Family(name: "scangate_reads_rejected_total",
                              help: "Rejected reads by reason: a pass's refusal (revoked, policy-stale, expired, replayed, ...) or payload-filter.",
                              type: "counter")
        for r in m.rejections { rejected.samples.append(("", [("reason", r.name)], String(r.count))) }
        families.append(rejected)
        if !m.statusLists.isEmpty {
            var issued = Family(name: "scangate_status_list_issued_timestamp_seconds",
                                help: "The iat of each status list in force (its age: time() minus this).", type: "gauge")
            var expires = Family(name: "scangate_status_list_expiry_timestamp_seconds",
                                 help: "The exp of each status list in force; past it, policy-stale decides.", type: "gauge")
            var entries = Family(name: "scangate_status_list_entries", help: "Entries in each status list in force.", type: "gauge")
            for l in m.statusLists {
                let labels = [("uri", l.uri), ("source", l.kept ? "kept" : "file")]
                issued.samples.append(("", labels, String(l.issuedAt)))
                expires.samples.append(("", labels, String(l.expiresAt)))
                entries.samples.append(("", labels, String(l.entries)))
            }
            families += [issued, expires, entries]
        }
        if let p = m.sitePolicy {
            let labels = [("source", p.kept ? "kept" : "file")]
            families += [
                Family(name: "scangate_site_policy_version", help: "The ver of the site policy in force (it only goes up).", type: "gauge",
                       samples: [("", labels, String(p.version))]),
                Family(name: "scangate_site_policy_issued_timestamp_seconds", help: "The iat of the site policy in force.", type: "gauge",
                       samples: [("", labels, String(p.issuedAt))]),
                Family(name: "scangate_site_policy_expiry_timestamp_seconds", help: "The exp of the site policy in force; past it, policy-stale decides.",
                       type: "gauge", samples: [("", labels, String(p.expiresAt))]),
            ]
        }
        if let p = m.passbackSharing {
            families += [
                Family(name: "scangate_passback_shared", help: "1 while anti-passback uses are shared with the site (the broker is connected), 0 while this kiosk's own view decides.",
                       type: "gauge", samples: [("", [], p.view == "shared" ? "1" : "0")]),
                Family(name: "scangate_passback_uses_sent_total", help: "This kiosk's anti-passback uses handed to the broker.", type: "counter",
                       samples: [("", [], String(p.sent))]),
                Family(name: "scangate_passback_uses_received_total", help: "Other kiosks' anti-passback uses received, by whether they were newer than the one held.",
                       type: "counter", samples: [("", [("applied", "true")], String(p.applied)), ("", [("applied", "false")], String(p.received - min(p.received, p.applied)))]),
                Family(name: "scangate_passback_uses_waiting", help: "This kiosk's uses held until the broker is back.", type: "gauge",
                       samples: [("", [], String(p.waiting))]),
            ]
        }
        var errors = Family(name: "scangate_output_errors_total", help: "Reads an output lost or could not send, by output.", type: "counter")
        for e in m.outputErrors { errors.samples.append(("", [("output", e.output)], String(e.count))) }
        families.append(errors)
        if !m.alarms.isEmpty {
            families.append(Family(name: "scangate_alarm", help: "1 while an output's alarm is active (an OSDP reader's tamper switch, power failure).",
                                   type: "gauge", samples: m.alarms.map { ("", [("output", $0.output), ("alarm", $0.alarm.name)], $0.alarm.active ? "1" : "0") }))
        }
        var histogram = Family(name: "scangate_decode_seconds", help: "Time to decode one frame.", type: "histogram")
        var cumulative: UInt64 = 0
        for (i, bound) in m.decodeSeconds.bounds.enumerated() {
            cumulative += m.decodeSeconds.counts[i]
            histogram.samples.append(("_bucket", [("le", value(bound))], String(cumulative)))
        }
        histogram.samples.append(("_bucket", [("le", "+Inf")], String(m.decodeSeconds.count)))
        histogram.samples.append(("_sum", [], value(m.decodeSeconds.sum)))
        histogram.samples.append(("_count", [], String(m.decodeSeconds.count)))
        families.append(histogram)
        families.append(gauge("scangate_camera_up", "1 while the camera delivers frames.", m.cameraUp ? 1 : 0))
        if let c = m.controllerOnline {
            families.append(gauge("scangate_controller_online", "1 while the door controller is there (an OSDP panel polling).", c ? 1 : 0))
        }
        if let c = m.mqttConnected {
            families.append(gauge("scangate_mqtt_connected", "1 while the MQTT broker is connected.", c ? 1 : 0))
        }
        if let d = m.mqttSpoolEvents {
            families.append(gauge("scangate_mqtt_spool_events", "Events in the MQTT spool, not yet acknowledged by the broker.", Double(d)))
        }
        if let d = m.mqttSpoolDropped {
            families.append(counter("scangate_mqtt_spool_dropped_total",
                                    "Events the MQTT spool dropped (full, too old, damaged, refused, no space on the disk, queue full).", d))
        }
        if let d = m.mqttSpoolDroppedNoSpace {
            families.append(counter("scangate_mqtt_spool_dropped_no_space_total",
                                    "Events dropped because the MQTT spool's file system had no room for them.", d))
        }
        return render(families)
    }
}

/// Writes the metrics in the node exporter's textfile-collector format every `intervalSeconds`, on its
/// own thread: the Debian convention is /var/lib/prometheus/node-exporter/scangate.prom, read by
/// prometheus-node-exporter's textfile collector. Each write is atomic: a temporary file in the same
/// directory (named without the .prom the collector reads), then rename(2). At close, a last file with
/// `scangate_up 0`, so a stopped daemon does not look alive.
public final class MetricsTextfile: Sendable {
    public let path: String
    public let intervalSeconds: Double
    private let writer: Writer
    private let timer: PosixMutex<Worker<Never>?>
    private let closed = Atomic<Bool>(false)

    public static let defaultPath = "/var/lib/prometheus/node-exporter/scangate.prom"

    /// What the thread needs (not the MetricsTextfile itself, so dropping it closes it).
    final class Writer: Sendable {
        let path: String
        let provider: @Sendable () -> MetricsSnapshot
        let logger: Logger
        let writes = Atomic<UInt64>(0)
        /// One write at a time (the thread, close, and the stop deadline's last word share the temporary name).
        private let writing = PosixMutex<MetricsSnapshot?>(nil)

        init(path: String, provider: @escaping @Sendable () -> MetricsSnapshot, logger: Logger) {
            self.path = path
            self.provider = provider
            self.logger = logger
        }

        /// Set once by the stop deadline: from then on every file says scangate_up 0.
        private let down = Atomic<Bool>(false)

        func write(_ snapshot: MetricsSnapshot) throws(SystemError) {
            try writing.withLock { last throws(SystemError) in
                var snapshot = snapshot
                if down.load(ordering: .sequentiallyConsistent) { snapshot.up = false }
                try writeUnlocked(snapshot)
                last = snapshot
                // The deadline came while this file was being written, saw the lock taken and left the
                // last word to this thread: the file just renamed into place must not say up.
                if snapshot.up && down.load(ordering: .sequentiallyConsistent) {
                    snapshot.up = false
                    try writeUnlocked(snapshot)
                    last = snapshot
                }
            }
        }

        /// The last snapshot written, again with scangate_up 0. It reuses the last snapshot rather than
        /// asking the daemon's components, one of which may be what is stuck. It waits at most
        /// `patienceMilliseconds` for a write under way (that write may be the stuck one); any write
        /// that ends after this call says up 0 itself. False when this call wrote nothing.
        func writeLastDown(patienceMilliseconds: Double = 200) throws(SystemError) -> Bool {
            down.store(true, ordering: .sequentiallyConsistent)
            let giveUp = MonotonicInstant.now().adding(milliseconds: patienceMilliseconds)
            while true {
                let result: Result<Bool, SystemError>? = writing.withLockIfAvailable { last in
                    guard var snapshot = last else { return .success(false) }
                    snapshot.up = false
                    do throws(SystemError) { try writeUnlocked(snapshot) } catch { return .failure(error) }
                    last = snapshot
                    return .success(true)
                }
                switch result {
                case .some(.success(let wrote)): return wrote
                case .some(.failure(let e)): throw e
                case .none:
                    guard MonotonicInstant.now() < giveUp else { return false }
                    sleepThread(milliseconds: 2)
                }
            }
        }

        private func writeUnlocked(_ snapshot: MetricsSnapshot) throws(SystemError) {
            let text = PrometheusText.render(snapshot)
            // Atomic (PATH.tmp, then rename(2)) but never synced: the file has no durability promise.
            // fchmod: the umask may have taken read bits the node exporter needs.
            do throws(AtomicFile.Failure) {
                try AtomicFile.replace(path, with: Array(text.utf8), mode: 0o644, durable: false)
            } catch {
                throw error.error
            }
            writes.add(1, ordering: .relaxed)
        }
    }

    /// Checks the name, writes the first file and starts the thread.
    public init(path: String = MetricsTextfile.defaultPath, intervalSeconds: Double = 5,
                provider: @escaping @Sendable () -> MetricsSnapshot, logger: Logger) throws(SystemError) {
        self.path = path
        self.intervalSeconds = max(0.05, intervalSeconds)
        self.timer = PosixMutex(nil)
        guard path.hasSuffix(".prom") else {
            throw SystemError("metrics-textfile (the name must end in .prom for the collector)", path, .invalidArgument)
        }
        let writer = Writer(path: path, provider: provider, logger: logger)
        self.writer = writer
        try writer.write(provider())
        let interval = UInt64(self.intervalSeconds * 1e9)
        let t = try Worker<Never>(name: "metrics-file", capacity: 1, overflow: .refuse) { inbox in
            while !inbox.isStopping {
                guard !inbox.wait(nanoseconds: interval) else { continue }
                do {
                    try writer.write(writer.provider())
                } catch {
                    writer.logger.warning("metrics-textfile: \(error)", rateLimitKey: "metrics-textfile")
                }
            }
        }
        timer.withLock { $0 = t }
    }

    deinit { close() }

    /// Files written so far.
    public var filesWritten: UInt64 { writer.writes.load(ordering: .relaxed) }

    /// Renders `snapshot` and replaces the file atomically.
    public func write(_ snapshot: MetricsSnapshot) throws(SystemError) { try writer.write(snapshot) }

    /// The stop deadline's path (the process ends next, threads may be stuck): one last file saying
    /// scangate_up 0, from the caller's thread. It waits at most 200 ms for a write under way, and
    /// every write from now on says up 0 too (false when this call wrote nothing).
    @discardableResult
    public func writeDown() -> Bool {
        do {
            return try writer.writeLastDown()
        } catch {
            writer.logger.warning("metrics-textfile: \(error)")
            return false
        }
    }

    /// Stops the thread and leaves a last file with scangate_up 0. Once.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // A write stuck on the disk is left after 2 s; the last file below waits for it (one write at a time).
        timer.withLock { $0 }?.stop(deadline: .now().adding(milliseconds: 2000))
        var last = writer.provider()
        last.up = false
        do {
            try writer.write(last)
        } catch {
            writer.logger.warning("metrics-textfile: \(error)")
        }
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

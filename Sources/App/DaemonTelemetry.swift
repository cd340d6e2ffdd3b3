import Components
import Core
import Credentials
import MQTT
import Pipeline
import Platform
import Service

/// What the daemon knows about itself, for `scangate status`, the MQTT state and the metrics file:
/// counters that survive reloads (each pipeline run's are added when it ends), reads by symbology and
/// verdict, the decode-time histogram, and the health of the camera and every output. Fed from the
/// decode queue (`report`, `frameDecoded`) without blocking; read from the status, MQTT and metrics
/// threads.
final class DaemonTelemetry: ReportOutput, @unchecked Sendable {
    let name = "telemetry"

    private struct Counts {
        var captured: UInt64 = 0
        var decoded: UInt64 = 0
        var dropped: UInt64 = 0
        var reported: UInt64 = 0
        var rejected: UInt64 = 0
        var reads: [String: UInt64] = [:]        // "symbology\u{0}verdict"
        var refusals: [String: UInt64] = [:]     // door output -> reads it refused
        var rejections: [String: UInt64] = [:]   // reason (RejectionReason.key) -> rejected reads
        var statusLists: [StatusReport.StatusList] = []
        var sitePolicy: StatusReport.SitePolicy? = nil
        var lastReadAt: Int64?
        var decodeSeconds = MetricsHistogram.decodeTime()
        /// The pipeline running now (its counters are live; they are folded in when it ends). Under the
        /// same lock as the totals, so a reader never sees a finished run counted twice or not at all.
        var current: Pipeline?
    }
    private let counts = PosixMutex(Counts())
    private let started = MonotonicInstant.now()
    private let status: StatusBoard
    private let camera: String
    private let outputs: @Sendable () -> [any Output]
    /// The site link over MQTT (anti-passback sharing), when the daemon has one.
    let site: SiteLink?
    /// camera-tamper's verdict, shown on the camera's row.
    private let scene: CameraSceneSignal
    /// The newest frame and the codes of the newest decoded one (the daemon's; each pipeline run feeds it).
    let liveView: LiveView
    /// The current source's camera controls, for the status socket (the daemon swaps it with the source).
    let cameraControls = CameraControlsSlot()

    init(status: StatusBoard, camera: String, outputs: @escaping @Sendable () -> [any Output], site: SiteLink? = nil,
         scene: CameraSceneSignal = CameraSceneSignal(), liveView: LiveView = LiveView()) {
        self.scene = scene
        self.liveView = liveView
        self.status = status
        self.camera = camera
        self.outputs = outputs
        self.site = site
    }

    /// Anti-passback sharing over MQTT, when an MQTT output shares uses (nil otherwise).
    var passbackSharing: StatusReport.PassbackSharing? {
        guard let site else { return nil }
        let view = site.view
        guard view != .local else { return nil }
        let c = site.counts
        return StatusReport.PassbackSharing(view: view.rawValue, sent: c.sent, received: c.received, applied: c.applied,
                                            waiting: UInt64(c.waiting), dropped: c.dropped)
    }

    // MARK: fed by the pipeline

    func running(_ pipeline: Pipeline) { counts.withLock { $0.current = pipeline } }

    /// Folds a finished run's frame counters into the totals.
    func ended(_ pipeline: Pipeline) {
        counts.withLock { c in
            if c.current === pipeline { c.current = nil }
            c.captured += pipeline.stats.captured
            c.decoded += pipeline.stats.decoded
            c.dropped += pipeline.droppedFrames
        }
    }

    /// One frame decoded in `milliseconds` (the decode queue; the watchdog is fed at the same place).
    func frameDecoded(milliseconds: Double) {
        counts.withLock { $0.decodeSeconds.observe(milliseconds / 1000) }
    }

    func report(_ event: ReadEvent) {
        let verdict: String
        switch event.verdict {
        case .accepted: verdict = event.outputs.isEmpty || event.reachedADoorOutput ? "accepted" : "refused"
        case .rejected: verdict = "rejected"
        }
        counts.withLock { c in
            c.reported += 1
            if case .rejected(let reason) = event.verdict {
                c.rejected += 1
                c.rejections[Self.rejectionKey(reason), default: 0] += 1
            }
            c.reads[event.symbol.symbology.zbarName + "\u{0}" + verdict, default: 0] += 1
            for r in event.refusals { c.refusals[r.output, default: 0] += 1 }
            c.lastReadAt = event.wallTimeNanoseconds
        }
    }

    func close(deadline: MonotonicInstant) {}

    /// A rejection's reason as a bounded key: a pass's refusal reason as it is, anything else (the payload
    /// filter's sentences, which carry lengths) as `payload-filter`.
    static func rejectionKey(_ reason: String) -> String {
        RefusalReason(rawValue: reason) != nil ? reason : "payload-filter"
    }

    /// The status lists the policies now in force decide with (at start and after each reload).
    func policiesInForce(_ policies: [any ReadPolicy]) {
        let lists = policies.compactMap { $0 as? CredentialPolicy }.compactMap(\.statusLists).flatMap { set in
            set.lists.map { StatusReport.StatusList(uri: $0.uri, entries: $0.list.count, issuedAt: $0.issuedAt,
                                                    expiresAt: $0.expiresAt, kept: set.isKept($0)) }
        }
        let site = policies.compactMap { $0 as? CredentialPolicy }.compactMap(\.sitePolicy).first.flatMap { inForce in
            inForce.policy.map { p in
                StatusReport.SitePolicy(version: p.version, issuedAt: p.issuedAt, expiresAt: p.expiresAt, kept: { if case .kept = inForce.origin { return true }; return false }())
            }
        }
        counts.withLock {
            $0.statusLists = lists
            $0.sitePolicy = site
        }
    }

    // MARK: read by the status socket, MQTT and metrics

    private struct Frames { var captured: UInt64; var decoded: UInt64; var dropped: UInt64 }

    private var frames: Frames {
        counts.withLock { c in
            let live = c.current
            return Frames(captured: c.captured + (live?.stats.captured ?? 0), decoded: c.decoded + (live?.stats.decoded ?? 0),
                   dropped: c.dropped + (live?.droppedFrames ?? 0))
        }
    }

    var uptimeSeconds: Double { MonotonicInstant.now().milliseconds(since: started) / 1000 }

    /// The camera as a component: up while the capture side scans (or is paused), down while it is lost,
    /// degraded while camera-tamper finds it covered or turned away (alarm `camera-tamper`).
    var cameraHealth: ComponentHealth {
        let capture = status.capture
        let tamper = scene.tamper
        let state: ComponentHealth.State = capture == .cameraLost ? .down
            : (capture == .starting || tamper != nil ? .degraded : .ok)
        var health = ComponentHealth(name: "camera", state: state,
                                     detail: "\(camera): \(capture.rawValue)" + (tamper.map { ", \($0.shout)" } ?? ""),
                                     lastError: capture == .cameraLost ? "camera lost" : nil,
                                     sent: frames.captured, errors: frames.dropped)
        if scene.watching { health.alarms = [HealthAlarm("camera-tamper", active: tamper != nil)] }
        return health
    }

    /// The camera and every output that can say how it is (MQTT left out when MQTT itself asks).
    func components(includingMQTT: Bool = true) -> [ComponentHealth] {
        [cameraHealth] + outputs().filter { includingMQTT || !($0 is MQTTOutput) }.compactMap { ($0 as? HealthReporting)?.health }
    }

    private var mqtt: MQTTOutput? { outputs().first { $0 is MQTTOutput } as? MQTTOutput }

    /// The door controller's links (OSDP, ...): never the MQTT broker, which is no controller. An offline
    /// one first, so it is never hidden by another that is online.
    private var doorLinks: [(name: String, link: StatusBoard.Link)] {
        status.links.filter { $0.key != "mqtt" }.sorted { ($0.value.online ? 1 : 0, $0.key) < ($1.value.online ? 1 : 0, $1.key) }
            .map { ($0.key, $0.value) }
    }
    private var controllerLink: (name: String, link: StatusBoard.Link)? { doorLinks.first }

    func statusReport() -> StatusReport {
        let f = frames
        let c = counts.withLock { $0 }
        var drops = [StatusReport.Drop(name: "frames replaced in the handoff", count: f.dropped)]
        for (output, count) in c.refusals.sorted(by: { $0.key < $1.key }) {
            drops.append(StatusReport.Drop(name: "reads refused by \(output)", count: count))
        }
        let mqttStatus = mqtt.map { m -> StatusReport.MQTT in
            let l = m.link
            return StatusReport.MQTT(connected: l.connected, detail: l.detail, spoolEvents: l.spool.records,
                                     spoolBytes: l.spool.bytes, dropped: l.dropped, droppedNoSpace: l.noSpaceDropped)
        }
        var report = StatusReport(status: status.status.rawValue, version: ScanGateCommand.version, pid: getpid(),
                            uptimeSeconds: uptimeSeconds,
                            frames: StatusReport.Frames(captured: f.captured, decoded: f.decoded, dropped: f.dropped),
                            reads: StatusReport.Reads(reported: c.reported, rejected: c.rejected, lastAt: c.lastReadAt),
                            drops: drops, devices: components(),
                            controller: controllerLink.map { StatusReport.Link(name: $0.name, online: $0.link.online, detail: $0.link.detail) },
                            mqtt: mqttStatus,
                            rejections: c.rejections.sorted { $0.key < $1.key }.map { StatusReport.Drop(name: $0.key, count: $0.value) },
                            statusLists: c.statusLists)
        report.sitePolicy = c.sitePolicy
        report.passbackSharing = passbackSharing
        report.view = Self.view(of: liveView.look())
        return report
    }

    /// The newest frame with its view, for `status --snapshot` (nil before the first frame).
    func snapshot() -> StatusSnapshot? {
        let look = liveView.look()
        guard let frame = look.frame, let view = Self.view(of: look) else { return nil }
        return StatusSnapshot(view: view, luma: frame.luma)
    }

    /// The figures of the newest frame (computed now, on the asking thread) and the decoder's codes.
    static func view(of look: LiveView.Look) -> StatusReport.View? {
        guard let frame = look.frame else { return nil }
        return StatusReport.View(
            frame: frame.sequence, width: frame.width, height: frame.height, framesPerSecond: look.framesPerSecond,
            figures: FrameFigures.measure(luma: frame.luma, width: frame.width, height: frame.height),
            decodedFrame: look.decoded?.frame,
            codes: (look.decoded?.codes ?? []).map {
                StatusReport.View.Code(symbology: $0.symbology.zbarName, corners: $0.corners, payload: $0.payload)
            },
            gate: look.gate.map {
                StatusReport.View.Gate(region: Rect(x: 0, y: 0, w: frame.width, h: frame.height), threshold: $0.threshold,
                                       rescanFrames: $0.rescanFrames)
            })
    }

    func mqttState() -> MQTTState {
        let f = frames
        let c = counts.withLock { $0 }
        return MQTTState(status: status.status, version: ScanGateCommand.version, uptimeSeconds: uptimeSeconds,
                          components: components(includingMQTT: false),
                          counters: MQTTCounters(framesCaptured: f.captured, framesDecoded: f.decoded, framesDropped: f.dropped,
                                                  reads: c.reported, rejected: c.rejected),
                          lastReadWallNanoseconds: c.lastReadAt)
    }

    func metrics() -> MetricsSnapshot {
        let f = frames
        let c = counts.withLock { $0 }
        var m = MetricsSnapshot()
        m.framesCaptured = f.captured
        m.framesDecoded = f.decoded
        m.framesDropped = f.dropped
        m.reads = c.reads.sorted { $0.key < $1.key }.map { key, count in
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            return MetricsSnapshot.ReadCount(symbology: parts[0], verdict: parts.count > 1 ? parts[1] : "", count: count)
        }
        let healths = outputs().compactMap { ($0 as? HealthReporting)?.health }
        m.outputErrors = healths.map { MetricsSnapshot.OutputErrors(output: $0.name, count: $0.errors) }
        m.alarms = ([cameraHealth] + healths).flatMap { h in h.alarms.map { MetricsSnapshot.OutputAlarm(output: h.name, alarm: $0) } }
        m.decodeSeconds = c.decodeSeconds
        m.rejections = c.rejections.sorted { $0.key < $1.key }.map { StatusReport.Drop(name: $0.key, count: $0.value) }
        m.statusLists = c.statusLists
        m.sitePolicy = c.sitePolicy
        m.passbackSharing = passbackSharing
        m.cameraUp = status.capture == .scanning || status.capture == .paused
        let links = doorLinks
        m.controllerOnline = links.isEmpty ? nil : links.allSatisfy(\.link.online)
        if let mqtt {
            let l = mqtt.link
            m.mqttConnected = l.connected
            m.mqttSpoolEvents = l.spool.records
            m.mqttSpoolDropped = l.dropped
            m.mqttSpoolDroppedNoSpace = l.noSpaceDropped
        }
        return m
    }
}

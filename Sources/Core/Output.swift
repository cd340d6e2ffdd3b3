import Platform

/// The output seams. The daemon builds each output once, holds it for its whole life (a reload rebuilds
/// an output only when its own settings changed) and closes it once at exit. Every call the decode
/// queue makes into an output returns at once: an output that does I/O keeps its own thread or queue.
///
/// A read walks through them once: the policies judge it (filters, signed passes); each door output is
/// offered it and says taken or refused; then every report output sees the finished event, verdicts
/// included; then feedback plays.
public protocol Output: AnyObject, Sendable {
    /// "stdout", "serial", "wiegand", "osdp", "mqtt": the name in JSON, logs, status and metrics.
    var name: String { get }
    /// Sends what is pending until `deadline` at the latest, drives its lines inactive, releases its
    /// port, session or line request. Called once; returns by the deadline even if a driver call hangs.
    func close(deadline: MonotonicInstant)
}

/// An output to a door controller: serial, Wiegand, OSDP. It carries the read's `doorData` (the payload,
/// or the number inside a verified pass), never anything else.
public protocol DoorOutput: Output {
    /// Called on the decode queue for each read the policies accepted, in order. Encodes what this
    /// output will send (once: the frame, the bits), queues it on the output's own thread and returns
    /// `.taken`, or returns `.refused` with the reason when it cannot carry this read (too long for OSDP,
    /// a number out of a Wiegand format's range, bytes the serial framing cannot carry). A refusal here
    /// does not refuse the read for the other outputs. Never blocks.
    func offer(_ event: ReadEvent) -> OutputOffer
}

/// An output that reports every read, accepted or not, with the verdicts: stdout, MQTT, the journal.
public protocol ReportOutput: Output {
    /// Called on the decode queue after the door outputs judged the read. Never blocks: an output that
    /// cannot keep up counts and logs what it drops.
    func report(_ event: ReadEvent)
}

/// What one door output did with one read.
public enum OutputOffer: Equatable, Sendable {
    /// Queued for sending on the output's own thread.
    case taken
    /// This output cannot carry this read; the reason goes to the log and the JSON line.
    case refused(reason: String)

    public var isTaken: Bool { self == .taken }
}

/// One door output's verdict on one read, as the JSON line shows it (`"refused":{"osdp":"..."}`).
public struct OutputVerdict: Equatable, Sendable {
    public let output: String
    public let offer: OutputOffer

    public init(output: String, offer: OutputOffer) {
        self.output = output
        self.offer = offer
    }
}

/// Told when the daemon's status changes: the status LED, sd_notify STATUS=, MQTT state, the journal.
public protocol StatusObserver: AnyObject, Sendable {
    /// Called from the thread that changed the status; never blocks.
    func statusChanged(_ status: DaemonStatus)
}

/// Where an output that talks to a controller says whether the controller is there (an OSDP panel
/// polling, an MQTT broker connected). The daemon turns a lost controller into `controller offline`.
public protocol ControllerLinkObserver: AnyObject, Sendable {
    /// `output` is the output's name. Called on a change only; never blocks.
    func controllerLink(_ output: String, online: Bool, detail: String)
}

/// An alarm a component watches: "tamper", active or not.
public struct HealthAlarm: Equatable, Sendable {
    public var name: String
    public var active: Bool

    public init(_ name: String, active: Bool) {
        self.name = name
        self.active = active
    }
}

/// How an output or device is doing, for `scangate status`, MQTT state and metrics.
public struct ComponentHealth: Equatable, Sendable {
    public enum State: String, Sendable {
        /// Working.
        case ok
        /// Working in part (a controller that has not polled yet, a broker reconnecting).
        case degraded
        /// Not working; `lastError` says why.
        case down
    }

    public var name: String
    public var state: State
    /// One line of what it is doing now: "/dev/ttyUSB0 9600 8N1", "polled by address 0, secure channel".
    public var detail: String
    /// The last error, with its wall-clock time (nanoseconds since the epoch).
    public var lastError: String?
    public var lastErrorAt: Int64?
    /// Reads sent and reads lost or refused by this output since start.
    public var sent: UInt64
    public var errors: UInt64
    /// The alarms this component watches, each active or not ("tamper", "power-failure"), in a fixed
    /// order: `scangate status` and the metrics' `scangate_alarm` gauge.
    public var alarms: [HealthAlarm]

    public init(name: String, state: State, detail: String, lastError: String? = nil, lastErrorAt: Int64? = nil,
                sent: UInt64 = 0, errors: UInt64 = 0, alarms: [HealthAlarm] = []) {
        self.alarms = alarms
        self.name = name
        self.state = state
        self.detail = detail
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.sent = sent
        self.errors = errors
    }
}

/// An output or device that can say how it is doing. Safe to call from any thread.
public protocol HealthReporting: AnyObject, Sendable {
    var health: ComponentHealth { get }
}

/// A check on the credential itself, applied to every output before any sees the read: the payload
/// filters, and signed passes (credential-format).
public protocol ReadPolicy: Sendable {
    /// Judges `event`, which arrives accepted. Either leaves it accepted (and may set `credential` and
    /// `doorData`: a verified pass gives door outputs its number, not the token), or sets `verdict` to
    /// `.rejected(reason:)`. Runs on the decode queue once per reported read (the debouncer reports a
    /// code that stays in view once), so a one-time pass is consumed here.
    func judge(_ event: inout ReadEvent)

    /// Called for every read once the policies are done with it, whatever the verdict and whichever
    /// policy refused it, before any output sees it. A policy whose payloads are secrets (signed passes:
    /// a bearer token refused by a payload filter still opens another door) replaces the payload with
    /// a fingerprint here. The default does nothing.
    func conceal(_ event: inout ReadEvent)
}

extension ReadPolicy {
    public func conceal(_ event: inout ReadEvent) {}
}

/// What the daemon gives an output when it builds one: the logger, the feedback hub (for a controller's
/// LED and buzzer commands, or a serial reply) and the status board (for a controller's link). Both
/// live for the daemon's whole run, so an output may keep them.
public struct OutputContext: Sendable {
    public let logger: Logger
    public let feedback: any FeedbackSink
    public let links: any ControllerLinkObserver
    /// Where a config file sent by a controller goes (OSDP file transfer); nil: the daemon runs on flags
    /// only and refuses such files.
    public let configFile: ConfigFileInstaller?
    /// The door relay, for a panel's output commands (OSDP osdp_OUT); empty when none is configured.
    public let relay: PanelRelaySlot
    /// The camera's scene watch (camera-tamper), for a reader's tamper status (OSDP).
    public let scene: CameraSceneSignal

    public init(logger: Logger, feedback: any FeedbackSink, links: any ControllerLinkObserver,
                configFile: ConfigFileInstaller? = nil, relay: PanelRelaySlot = PanelRelaySlot(),
                scene: CameraSceneSignal = CameraSceneSignal()) {
        self.scene = scene
        self.logger = logger
        self.feedback = feedback
        self.links = links
        self.configFile = configFile
        self.relay = relay
    }
}

/// The daemon's side of a config file that a controller sends: `check` judges the text as a reload would
/// (no side effects, fast enough for a link thread: nil means it would load, else the reason it would be
/// refused); `install` writes a checked text over the config file atomically and reloads.
public struct ConfigFileInstaller: Sendable {
    public let check: @Sendable ([UInt8]) -> String?
    public let install: @Sendable ([UInt8]) -> Void

    public init(check: @escaping @Sendable ([UInt8]) -> String?, install: @escaping @Sendable ([UInt8]) -> Void) {
        self.check = check
        self.install = install
    }
}

/// Where the pipeline hands each read once the policies and the door outputs judged it: the feedback
/// hub, which plays grant, deny or the read cue as `feedback` says.
public protocol ReadFeedback: AnyObject, Sendable {
    /// `doorOutputs`: how many door outputs are configured (none: nothing can refuse the read).
    func readJudged(_ event: ReadEvent, doorOutputs: Int)
}

/// Something that drives lines: LEDs, a buzzer, Wiegand D0/D1, a door relay. When shutdown runs out of
/// time (a thread stuck in a blocking call), the daemon calls `forceInactive()` from its signal thread
/// just before it ends the process, so no line is left active.
public protocol LineHolder: AnyObject, Sendable {
    /// Drives every line inactive now, from any thread, without waiting for the owner's thread. Bounded.
    func forceInactive()
}

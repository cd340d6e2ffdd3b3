import Core
import GPIO
import InputLines
import Platform
import Runtime
import SerialLine
import Settings

/// ScanGate as an OSDP reader: the door output that answers a panel's polls on a serial line.
///
/// Owns the `SerialPort` and one `Worker` (the link thread, "osdp-link"). That thread alone owns
/// the PD state machine (`OSDPPeripheral`): it reads the line, feeds the bytes in, writes each reply
/// (bounded by a write deadline), switches address and speed after an osdp_COM reply is on the wire,
/// reopens a port that vanished (backoff 100 ms doubling to 5 s) and closes the port at `close`. It never
/// waits on the decode queue: `offer` only posts to the worker's mailbox, which the thread drains before
/// each command, so a poll is answered in well under the spec's 200 ms while a frame is being decoded.
///
/// The panel's LED and buzzer commands go to `feedback` as `.command(...)` with origin "osdp"; the
/// panel polling or not goes to `linkObserver` (on a change only). Its osdp_OUT for output 0 goes to the
/// door relay through `relay` (the daemon's slot; nothing there: the command is logged and dropped), and
/// osdp_OSTATR reports the relay's state from the same slot.
public final class OSDPOutput: DoorOutput, HealthReporting {
    public let name = "osdp"
    private let settings: OSDPSettings
    /// Reads waiting for the panel's next poll; far more than a reader produces between two polls.
    static let mailboxCapacity = 256
    private let healthState: PosixMutex<ComponentHealth>
    private let logger: Logger
    private let wiegandBits: (@Sendable (ReadEvent) -> Result<[Bool], OSDPCardRefusal>)?
    private let worker: Worker<OSDPCardRead>
    /// The tamper switch, supply monitor and door contact lines (nil: none configured).
    private let inputs: DebouncedInputs?

    /// Builds the PD from the settings, the key file and the state file (errors name the file or option),
    /// and starts the link thread. A port that cannot be opened now is logged and retried in the
    /// background: it never stops scanning.
    ///
    /// - `features`: what the feedback hardware can show, for a truthful osdp_PDCAP.
    /// - `wiegandBits`: the Wiegand output's encoder, needed for `osdp-card-format = wiegand`.
    /// - `firmware`: major, minor, build for osdp_PDID.
    public init(settings: OSDPSettings, features: OSDPReaderFeatures, feedback: FeedbackSink,
                linkObserver: ControllerLinkObserver, logger: Logger, firmware: [UInt8] = [0, 0, 0],
                wiegandBits: (@Sendable (ReadEvent) -> Result<[Bool], OSDPCardRefusal>)? = nil,
                relay: PanelRelaySlot = PanelRelaySlot(),
                system: SerialSystemCalls = GlibcSerialSystemCalls(),
                gpiod: any GpiodCalls = SystemGpiodCalls(),
                clock: @escaping @Sendable () -> MonotonicInstant = { MonotonicInstant.now() },
                machineIDPath: String = "/etc/machine-id",
                hwmonRoot: String = "/sys/class/hwmon", configFile: ConfigFileInstaller? = nil,
                scene: CameraSceneSignal = CameraSceneSignal()) throws(UsageError) {
        guard let device = settings.device else { throw UsageError("osdp: no device set (osdp = /dev/ttyUSB0 ...)") }
        if settings.cardFormat == .wiegand && wiegandBits == nil {
            throw UsageError("osdp-card-format = wiegand needs the Wiegand encoder: configure the [wiegand] format, or use osdp-card-format = raw")
        }
        let startup = try OSDPStartup.resolve(settings, features: features, firmware: firmware, machineIDPath: machineIDPath)
        for warning in startup.warnings { logger.warning(warning) }
        for note in startup.notes { logger.notice(note) }
        // Temporary files of a write that a power cut or kill -9 interrupted before its rename.
        for file in [settings.scbkFile, settings.stateFile] {
            do throws(SystemError) {
                for removed in try OSDPFiles.removeStaleTemporaries(of: file) {
                    logger.notice("osdp: removed \(removed), left by a write that was cut off before it completed")
                }
            } catch {
                logger.warning("osdp: cannot remove the temporary files an interrupted write left beside \(file): \(error)")
            }
        }
        let store = OSDPFileStore(keyPath: settings.scbkFile, statePath: settings.stateFile,
                                  state: startup.persisted ?? OSDPPersistedState())
        let peripheral: OSDPPeripheral
        do throws(OSDPCryptoError) {
            peripheral = try OSDPPeripheral(configuration: startup.configuration, store: store, logger: logger, now: clock())
        } catch {
            throw UsageError("osdp: \(error)")
        }
        if let configFile {
            peripheral.fileTransfer = OSDPFileTransfer { bytes in configFile.check(bytes).map { (.unacceptable, $0) } }
        }
        if features.outputs > 0 { peripheral.outputLevels = { [relay.isActive] } }
        self.settings = settings
        self.logger = logger
        self.wiegandBits = wiegandBits
        let health = PosixMutex(ComponentHealth(name: "osdp", state: .down, detail: "\(device): not open yet"))
        self.healthState = health
        let levels = PosixMutex(OSDPInputLevels())
        var undervoltage: OSDPUndervoltageFlag?
        if settings.powerUndervoltage {
            undervoltage = OSDPUndervoltageFlag.find(root: hwmonRoot)
            if let flag = undervoltage {
                logger.info("osdp: power status includes the firmware's under-voltage flag (\(flag.path))")
            } else {
                logger.warning("osdp: osdp-power-undervoltage = yes, but no rpi_volt hwmon device under \(hwmonRoot) (not a Raspberry Pi, or its kernel lacks raspberrypi-hwmon): power is reported from osdp-power-line alone")
            }
        }
        let link = OSDPLink(device: device, settings: settings, baud: startup.configuration.baud,
                            peripheral: peripheral, health: health, feedback: feedback, relay: relay,
                            linkObserver: linkObserver, logger: logger, system: system, clock: clock,
                            levels: levels, undervoltage: undervoltage, configFile: configFile, scene: scene)
        var lines: [DebouncedInputs.Input] = []
        if let line = settings.tamperLine {
            lines.append(.init(name: "tamper", title: "tamper switch", option: "osdp-tamper-line", line: line, activeLow: settings.tamperActiveLow))
        }
        if let line = settings.powerLine {
            lines.append(.init(name: "power", title: "supply monitor", option: "osdp-power-line", line: line, activeLow: settings.powerActiveLow))
        }
        if let line = settings.doorContactLine {
            lines.append(.init(name: "door", title: "door contact", option: "door-contact-line", line: line, activeLow: settings.doorContactActiveLow))
        }
        if !lines.isEmpty, let chip = settings.inputChip {
            do throws(SystemError) {
                inputs = try DebouncedInputs(prefix: "osdp", chip: chip, inputs: lines,
                                             runtime: .init(debounceMs: Double(settings.inputDebounceMs)), calls: gpiod, logger: logger) { name, active in
                    levels.withLock { $0.set(name, active) }
                }
            } catch {
                throw UsageError("osdp: cannot start the input thread: \(error)")
            }
        } else {
            inputs = nil
        }
        do throws(SystemError) {
            worker = try Worker(name: "osdp-link", capacity: Self.mailboxCapacity, overflow: .refuse) { inbox in link.run(inbox) }
        } catch {
            inputs?.close(deadline: MonotonicInstant.now().adding(milliseconds: 500))
            throw UsageError("osdp: cannot start the link thread: \(error)")
        }
    }

    /// Called on the decode queue: refuses what OSDP cannot carry, queues the rest for the next poll.
    public func offer(_ event: ReadEvent) -> OutputOffer {
        let read: OSDPCardRead
        switch settings.cardFormat {
        case .raw:
            let bytes = event.doorData
            guard !bytes.isEmpty else { return .refused(reason: "osdp: an empty payload has no card data") }
            guard bytes.count <= settings.maxCardBytes else {
                return .refused(reason: "osdp: \(bytes.count) bytes, more than osdp-max-card-bytes (\(settings.maxCardBytes)); panels built on libosdp cannot decode a longer osdp_RAW")
            }
            read = .raw(seq: event.seq, bytes: bytes, emittedAt: event.emittedAt)
        case .wiegand:
            guard let wiegandBits else { return .refused(reason: "osdp: no Wiegand encoder") }
            switch wiegandBits(event) {
            case .failure(let refusal):
                return .refused(reason: "osdp (wiegand): \(refusal.reason)")
            case .success(let bits):
                guard !bits.isEmpty, bits.count <= settings.maxCardBytes * 8 else {
                    return .refused(reason: "osdp (wiegand): \(bits.count) bits, outside 1 to \(settings.maxCardBytes * 8) (osdp-max-card-bytes)")
                }
                read = .wiegand(seq: event.seq, bits: bits, emittedAt: event.emittedAt)
            }
        }
        switch worker.post(read) {
        case .queued, .queuedDroppingOldest: return .taken
        case .full: return .refused(reason: "osdp: \(Self.mailboxCapacity) reads already wait for the panel's poll")
        case .stopping: return .refused(reason: "osdp: the output is closing")
        }
    }

    public var health: ComponentHealth { healthState.withLock { $0 } }

    /// Stops the link thread (it answers nothing more), closes the port and drops reads still waiting
    /// (logged). Returns by `deadline` even if the thread is stuck in a driver call.
    public func close(deadline: MonotonicInstant) {
        inputs?.close(deadline: deadline)
        guard !worker.isStopping else { return }
        if !worker.stop(deadline: deadline) {
            logger.warning("osdp: the link thread did not stop by the close deadline; leaving it")
        }
    }

    deinit { close(deadline: MonotonicInstant.now().adding(milliseconds: 1000)) }
}

/// The debounced levels of the input lines, set by the input thread and read by the link thread.
struct OSDPInputLevels: Sendable {
    var tamper = false
    var powerFailure = false
    var doorOpen = false

    mutating func set(_ name: String, _ active: Bool) {
        switch name {
        case "tamper": tamper = active
        case "power": powerFailure = active
        case "door": doorOpen = active
        default: break
        }
    }
}

/// A Raspberry Pi's under-voltage flag as the kernel exposes it: the raspberrypi-hwmon driver's device
/// named "rpi_volt", whose in0_lcrit_alarm reads 1 while the firmware flags under-voltage.
public struct OSDPUndervoltageFlag: Sendable {
    public let path: String

    /// The alarm file of the first hwmon device under `root` named rpi_volt; nil when there is none.
    public static func find(root: String) -> OSDPUndervoltageFlag? {
        let entries: [String]
        do throws(SystemError) {
            entries = try Directory.entries(root).sorted()
        } catch {
            return nil
        }
        for entry in entries {
            let dir = root + "/" + entry
            guard case .success(let name) = readSmall(dir + "/name"), name == "rpi_volt" else { continue }
            return OSDPUndervoltageFlag(path: dir + "/in0_lcrit_alarm")
        }
        return nil
    }

    /// True while under-voltage is flagged.
    public func read() -> Result<Bool, BoundedFileError> {
        switch Self.readSmall(path) {
        case .success(let text): return .success(text == "1")
        case .failure(let e): return .failure(e)
        }
    }

    private static func readSmall(_ path: String) -> Result<String, BoundedFileError> {
        do throws(BoundedFileError) {
            return .success(try OSDPFiles.readSmallFile(path, limit: 4096, kind: "hwmon files").trimmingWhitespace())
        } catch {
            return .failure(error)
        }
    }
}

/// The link thread's state. Created by `OSDPOutput.init` and handed to the thread, which is from then on
/// its only user (hence @unchecked Sendable).
final class OSDPLink: @unchecked Sendable {
    private let device: String
    private let settings: OSDPSettings
    private var baud: Int
    private let peripheral: OSDPPeripheral
    private let health: PosixMutex<ComponentHealth>
    /// Set when the thread starts running.
    private var inbox: WorkerInbox<OSDPCardRead>?
    private let feedback: FeedbackSink
    private let relay: PanelRelaySlot
    private let linkObserver: ControllerLinkObserver
    private let logger: Logger
    private let system: SerialSystemCalls
    private let clock: @Sendable () -> MonotonicInstant
    private var port: SerialPort?
    private var backoffMs = 100.0
    private var nextOpenAt: MonotonicInstant
    private var online = false
    private var secure = false
    /// The input thread's debounced levels, and the under-voltage flag, looked at before each frame.
    private let levels: PosixMutex<OSDPInputLevels>
    private let undervoltage: OSDPUndervoltageFlag?
    private var undervoltageNow = false
    private var undervoltageReadAt: MonotonicInstant?
    private var reported = OSDPReaderStatus()
    private let configFile: ConfigFileInstaller?
    /// camera-tamper's verdict: a covered or turned-away camera is a tamper too.
    private let scene: CameraSceneSignal

    /// How long one wait for bytes lasts before the clock (offline, TTL) and the stop flag are looked at.
    static let sliceMs = 50.0
    /// A reply must start within the spec's 200 ms; one not on the wire by its own transmit time plus
    /// this margin is abandoned (discarded), so nothing leaves after the panel has moved on.
    static let writeMarginMs = 150.0

    init(device: String, settings: OSDPSettings, baud: Int, peripheral: OSDPPeripheral, health: PosixMutex<ComponentHealth>,
         feedback: FeedbackSink, relay: PanelRelaySlot, linkObserver: ControllerLinkObserver, logger: Logger, system: SerialSystemCalls,
         clock: @escaping @Sendable () -> MonotonicInstant, levels: PosixMutex<OSDPInputLevels>,
         undervoltage: OSDPUndervoltageFlag?, configFile: ConfigFileInstaller? = nil,
         scene: CameraSceneSignal = CameraSceneSignal()) {
        self.scene = scene
        self.levels = levels
        self.undervoltage = undervoltage
        self.device = device
        self.settings = settings
        self.baud = baud
        self.peripheral = peripheral
        self.health = health
        self.feedback = feedback
        self.relay = relay
        self.linkObserver = linkObserver
        self.logger = logger
        self.system = system
        self.clock = clock
        self.nextOpenAt = clock()
        self.configFile = configFile
    }

    func run(_ inbox: WorkerInbox<OSDPCardRead>) {
        self.inbox = inbox
        while !inbox.isStopping {
            let now = clock()
            dispatch(peripheral.tick(at: now))
            guard let port else {
                if now >= nextOpenAt { open(at: now) } else { sleepThread(milliseconds: min(Self.sliceMs, nextOpenAt.milliseconds(since: now))) }
                continue
            }
            ingest()
            let sliceEnd = now.adding(milliseconds: Self.sliceMs)
            switch port.read(maxBytes: 2048, deadline: { inbox.isStopping ? MonotonicInstant(nanoseconds: 0) : sliceEnd }, now: clock) {
            case .bytes(let bytes):
                ingest()
                for step in peripheral.receive(bytes, at: clock()) { perform(step) }
            case .timedOut:
                continue
            case .lost(let e):
                lose("\(device) went away (\(e))")
            case .failed(let e):
                lose("reading \(device) failed (\(e))")
            }
        }
        let left = peripheral.pendingReads + inbox.takeAll().count
        if left > 0 { logger.warning("osdp: closing with \(left) read(s) not polled by the panel; they are dropped") }
        port?.close()
        port = nil
        health.withLock { $0.state = .down; $0.detail = "\(self.device): closed" }
    }

    private func ingest() {
        for read in inbox?.takeAll() ?? [] { dispatch(peripheral.enqueue(read)) }
        refreshStatus()
    }

    /// The tamper, power and input levels into the PD (a change is sent at the next poll). The
    /// under-voltage flag is a sysfs read, made at most once a second.
    private func refreshStatus() {
        if let undervoltage {
            let now = clock()
            if undervoltageReadAt.map({ now.milliseconds(since: $0) >= 1000 }) ?? true {
                undervoltageReadAt = now
                switch undervoltage.read() {
                case .success(let flagged):
                    if flagged != undervoltageNow {
                        logger.warning("osdp: the firmware \(flagged ? "flags under-voltage" : "no longer flags under-voltage") (\(undervoltage.path))")
                    }
                    undervoltageNow = flagged
                case .failure(let e):
                    logger.warning("osdp: reading \(undervoltage.path) failed: \(e)", rateLimitKey: "osdp-undervoltage")
                }
            }
        }
        let l = levels.withLock { $0 }
        // LSTAT's tamper is the switch or the camera; ISTAT's input 0 is the switch alone.
        let camera = scene.tamper
        let status = OSDPReaderStatus(tamper: l.tamper || camera != nil, powerFailure: l.powerFailure || undervoltageNow,
                                      inputs: [l.tamper, l.doorOpen])
        guard status != reported else { return }
        if status.tamper != reported.tamper {
            let cause = status.tamper ? (l.tamper ? " (tamper switch)" : camera.map { " (camera \($0.rawValue))" } ?? "") : ""
            logger.notice("osdp: tamper \(status.tamper ? "active" : "normal")\(cause); the panel is told at its next poll")
        }
        if status.powerFailure != reported.powerFailure { logger.notice("osdp: power \(status.powerFailure ? "failure" : "normal"); the panel is told at its next poll") }
        reported = status
        peripheral.update(status)
        refreshHealth()
    }

    private func perform(_ step: OSDPStep) {
        if let reply = step.reply, let port {
            // 10 bits per character (8N1) at the line's speed, plus the margin.
            let budgetMs = Double(reply.count * 10) * 1000 / Double(baud) + Self.writeMarginMs
            let deadline = clock().adding(milliseconds: budgetMs)
            switch port.write(reply, deadline: { deadline }, now: clock) {
            case .sent:
                break
            case .timedOut(let written):
                logger.warning("osdp: a reply was not on the wire within \(Int(budgetMs)) ms (\(written) of \(reply.count) bytes); discarded", rateLimitKey: "osdp-write")
            case .lost(let e, _):
                lose("\(device) went away while replying (\(e))")
            case .failed(let e, _):
                lose("writing to \(device) failed (\(e))")
            }
        }
        dispatch(step.effects)
    }

    private func dispatch(_ effects: [OSDPEffect]) {
        for effect in effects {
            switch effect {
            case .feedback(let command):
                feedback.play(.command(command), origin: "osdp")
            case .text(let text):
                logger.info("osdp: TEXT from the panel (this reader has no display): \"\(Logger.escape(text))\"")
            case .readSent(let seq):
                logger.debug("osdp: read #\(seq) sent in osdp_RAW")
                health.withLock { $0.sent += 1 }
            case .readDropped(let seq, let reason):
                logger.warning("osdp: read #\(seq) dropped: \(reason)")
                let now = WallClock.nowNanoseconds()
                health.withLock {
                    $0.errors += 1
                    $0.lastError = "read #\(seq) dropped: \(reason)"
                    $0.lastErrorAt = now
                }
            case .link(let online, let detail):
                self.online = online
                logger.notice("osdp: panel \(online ? "online" : "offline"): \(detail)")
                linkObserver.controllerLink("osdp", online: online, detail: detail)
                refreshHealth()
            case .secureChannel(let active, let detail):
                secure = active
                logger.info("osdp: secure channel \(detail)")
                refreshHealth()
            case .switchLink(let address, let newBaud):
                switchLink(address: address, baud: newBaud)
            case .keyInstalled:
                refreshHealth()
            case .configFileReceived(let bytes):
                // Checked already (the last FTSTAT said so); the daemon writes it and reloads.
                if let configFile { configFile.install(bytes) } else { logger.warning("osdp: a config file arrived but nothing installs it; dropped") }
            case .drive(let order):
                // Output 0 is the door relay (the peripheral accepts no other output number).
                switch relay.command(order.command) {
                case .taken:
                    logger.info("osdp: OUT from the panel: door relay \(Self.describe(order.command))")
                case .refused(let reason):
                    logger.warning("osdp: OUT from the panel (door relay \(Self.describe(order.command))) not applied: \(reason)",
                                   rateLimitKey: "osdp-out")
                }
            }
        }
    }

    static func describe(_ command: RelayCommand) -> String {
        switch command {
        case .permanent(let on, let abortTimed):
            return "permanently \(on ? "on" : "off")" + (abortTimed ? "" : " (after a timed state ends)")
        case .temporary(let on, let ms):
            return "\(on ? "on" : "off") for \(ms) ms"
        }
    }

    private func open(at now: MonotonicInstant) {
        let line = SerialLineConfig(baud: SerialBaudRate(baud) ?? .default9600, rs485: settings.rs485)
        do throws(SystemError) {
            port = try SerialPort.open(path: device, line: line, system: system)
            backoffMs = 100
            peripheral.resetReader()
            logger.info("osdp: listening on \(device) (\(port?.lineDescription ?? "")) as address \(peripheral.address)")
            if case .ioctlOnly(let reason) = port?.exclusivity {
                logger.notice("osdp: no lock file for \(device) (\(reason)); the port is kept by TIOCEXCL alone")
            }
            refreshHealth()
        } catch {
            logger.warning("osdp: \(error); retrying in \(Int(backoffMs)) ms", rateLimitKey: "osdp-open")
            let text = "\(error)"
            health.withLock {
                $0.state = .down
                $0.detail = "\(self.device): not open"
                $0.lastError = text
                $0.lastErrorAt = WallClock.nowNanoseconds()
            }
            nextOpenAt = now.adding(milliseconds: backoffMs)
            backoffMs = min(backoffMs * 2, 5000)
        }
    }

    private func lose(_ why: String) {
        logger.warning("osdp: \(why); reopening")
        port?.close()
        port = nil
        nextOpenAt = clock().adding(milliseconds: backoffMs)
        backoffMs = min(backoffMs * 2, 5000)
        health.withLock {
            $0.state = .down
            $0.detail = "\(self.device): lost"
            $0.lastError = why
            $0.lastErrorAt = WallClock.nowNanoseconds()
        }
    }

    /// After an osdp_COM reply went out: the new speed needs the port reopened.
    private func switchLink(address: UInt8, baud newBaud: Int) {
        logger.notice("osdp: now address \(address) at \(newBaud) baud (COMSET)")
        guard newBaud != baud else { return refreshHealth() }
        baud = newBaud
        port?.close()
        port = nil
        nextOpenAt = clock()
        open(at: clock())
    }

    private func refreshHealth() {
        let isOpen = port != nil
        let required = settings.secure == .required
        let detail = "\(device) \(port?.lineDescription ?? "\(baud) baud"), address \(peripheral.address), "
            + (online ? "panel polling" : "panel not polling") + (secure ? ", secure channel up" : ", no secure channel")
            + (peripheral.installMode ? ", install mode" : "")
            + (reported.tamper ? ", TAMPER" : "") + (reported.powerFailure ? ", POWER FAILURE" : "")
            + (settings.doorContactLine == nil ? "" : (reported.inputs.count > 1 && reported.inputs[1] ? ", door open" : ", door closed"))
        let alarm = reported.tamper || reported.powerFailure
        let state: ComponentHealth.State = !isOpen ? .down : (online && (secure || !required) && !alarm) ? .ok : .degraded
        var alarms: [HealthAlarm] = []
        if settings.tamperLine != nil || scene.watching { alarms.append(HealthAlarm("tamper", active: reported.tamper)) }
        if settings.powerLine != nil || undervoltage != nil { alarms.append(HealthAlarm("power-failure", active: reported.powerFailure)) }
        health.withLock {
            $0.state = state
            $0.detail = detail
            $0.alarms = alarms
        }
    }
}

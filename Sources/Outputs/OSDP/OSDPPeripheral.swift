import Core
import Platform
import Settings

/// How the PD is set up (resolved from `OSDPSettings`, the key file and the state file).
public struct OSDPPeripheralConfiguration: Sendable {
    public var address: UInt8
    /// The line speed now: osdp_COM repeats it when an osdp_COMSET cannot be applied.
    public var baud: Int
    public var secure: OSDPSecureMode
    /// Accept SCBK-D (key selector 0) and one osdp_KEYSET, but only while `key` is nil: with a key
    /// installed SCBK-D is refused and osdp_PDCAP does not offer it.
    public var installMode: Bool
    /// The SCBK (nil: none yet; only install mode can set up a channel then).
    public var key: OSDPKey?
    public var identity: OSDPIdentity
    public var features: OSDPReaderFeatures
    public var offlineAfterMs: Double
    public var readTTLMs: Double
    /// The receive buffer osdp_PDCAP reports, and the longest frame the reader buffers.
    public var receiveBuffer: Int
    /// Reads waiting for a poll beyond this count push out the oldest.
    public var maxPendingReads: Int
    /// The inputs osdp_ISTATR reports (input 0 the tamper switch, 1 the door contact); 0: none, and
    /// osdp_PDCAP offers no contact monitoring.
    public var inputCount: Int = 0
    /// What osdp_MFG's build-id command reports ("scangate 0.1.0").
    public var buildID: String = ""

    public init(address: UInt8, baud: Int = 9600, secure: OSDPSecureMode, installMode: Bool = false, key: OSDPKey?,
                identity: OSDPIdentity, features: OSDPReaderFeatures, offlineAfterMs: Double = 8000,
                readTTLMs: Double = 5000, receiveBuffer: Int = OSDPWire.maximumPacketLength, maxPendingReads: Int = 16) {
        self.address = address
        self.baud = baud
        self.secure = secure
        self.installMode = installMode
        self.key = key
        self.identity = identity
        self.features = features
        self.offlineAfterMs = offlineAfterMs
        self.readTTLMs = readTTLMs
        self.receiveBuffer = receiveBuffer
        self.maxPendingReads = maxPendingReads
    }
}

/// What osdp_LSTATR and osdp_ISTATR report: the tamper switch, the supply, and the inputs (0 the tamper
/// switch, 1 the door contact).
public struct OSDPReaderStatus: Equatable, Sendable {
    public var tamper: Bool
    public var powerFailure: Bool
    public var inputs: [Bool]

    public init(tamper: Bool = false, powerFailure: Bool = false, inputs: [Bool] = []) {
        self.tamper = tamper
        self.powerFailure = powerFailure
        self.inputs = inputs
    }
}

/// Something the PD's owner must do (the state machine itself does no I/O besides its store).
public enum OSDPEffect: Equatable, Sendable {
    /// The panel's LED or buzzer command, for the feedback sink.
    case feedback(FeedbackCommand)
    /// osdp_TEXT for a display this reader does not have: log it.
    case text(String)
    /// This read left in an osdp_RAW reply.
    case readSent(seq: UInt64)
    /// This read will never be sent.
    case readDropped(seq: UInt64, reason: String)
    /// The panel started or stopped polling (for the ControllerLinkObserver).
    case link(online: Bool, detail: String)
    /// The secure channel came up or went down.
    case secureChannel(active: Bool, detail: String)
    /// After this step's reply is on the wire: answer at `address` and run the line at `baud` (osdp_COMSET).
    case switchLink(address: UInt8, baud: Int)
    /// osdp_KEYSET stored a new SCBK; install mode is over.
    case keyInstalled
    /// osdp_FILETRANSFER delivered a whole config file that passed the check (`OSDPFileTransfer`): install it.
    case configFileReceived([UInt8])
    /// osdp_OUT: drive this output (0: the door relay) as the panel asked.
    case drive(OSDPRelayCommand)
}

/// What one frame (or a tick of the clock) made the PD do.
public struct OSDPStep: Equatable, Sendable {
    /// The bytes to send (mark included when the command had one); nil: stay silent.
    public var reply: [UInt8]?
    public var effects: [OSDPEffect]

    public init(reply: [UInt8]? = nil, effects: [OSDPEffect] = []) {
        self.reply = reply
        self.effects = effects
    }
}

/// The OSDP peripheral device as a state machine: bytes from the line in, reply bytes out, with the
/// clock passed in. It keeps the link (sequence numbers, the cached last reply), the secure channel and
/// the reads waiting for a poll. Not thread-safe: one owner (the link thread) calls it.
///
/// - Sequence numbers: 0 resets the link and drops the secure channel. The very frame answered last,
///   sent again, is a retry: the cached reply is sent again, byte for byte, and nothing is done twice
///   (no read sent twice, no LED command played twice). Any other number than the next one
///   (1, 2, 3, 1, ...) is NAK 04 and changes nothing; so is a repeated number with a different frame.
/// - Frames for another address, replies from other PDs and frames with a bad check are never answered.
///   Broadcasts (0x7F) are answered from 0xFF.
public final class OSDPPeripheral {
    public private(set) var configuration: OSDPPeripheralConfiguration
    private let crypto: OSDPSecureChannelCrypto
    private let store: OSDPStore
    private let logger: Logger
    private let random: (Int) throws(OSDPCryptoError) -> [UInt8]
    private var reader: OSDPFrameReader

    private var lastSequence: UInt8?
    private var cached: (command: [UInt8], reply: [UInt8])?
    private var channel: OSDPChannelState = .inactive
    private var pending: [OSDPCardRead] = []
    /// osdp_FILETRANSFER reassembly; its check comes from the owner (none: transfers are refused).
    public var fileTransfer = OSDPFileTransfer()

    private enum LinkState { case unknown, online, offline }
    private var link: LinkState = .unknown
    private let startedAt: MonotonicInstant
    private var lastCommandAt: MonotonicInstant?
    /// osdp_KEEPACTIVE: the link counts as polled until then, whatever osdp-offline-after-ms says.
    private var keepActiveUntil: MonotonicInstant?
    /// osdp_ACURXSIZE: the largest frame the panel receives (nil: not said; the spec's 128 is assumed
    /// only once a panel says something).
    private var panelReceiveSize: Int?
    /// The tamper, power and input levels as last set; a change waits for the next poll (sent
    /// unsolicited, osdp_LSTATR first, then osdp_ISTATR).
    private var status = OSDPReaderStatus()
    private var localStatusDue = false
    private var inputStatusDue = false

    /// Counters for health and doctor.
    public private(set) var framesAnswered: UInt64 = 0
    public private(set) var badFrames: UInt64 = 0
    /// Whether each output is active now, for osdp_OSTATR (one entry per output of
    /// `configuration.features.outputs`); the owner sets it to read the door relay.
    public var outputLevels: () -> [Bool] = { [] }

    public init(configuration: OSDPPeripheralConfiguration, store: OSDPStore, logger: Logger, now: MonotonicInstant,
                random: @escaping (Int) throws(OSDPCryptoError) -> [UInt8] = { n throws(OSDPCryptoError) in try OSDPRandom.bytes(n) }) throws(OSDPCryptoError) {
        self.configuration = configuration
        self.crypto = OSDPSecureChannelCrypto(aes: try AES128())
        self.store = store
        self.logger = logger
        self.random = random
        self.reader = OSDPFrameReader(maxFrameLength: configuration.receiveBuffer)
        self.startedAt = now
    }

    public var address: UInt8 { configuration.address }
    public var isSecureChannelActive: Bool { channel.isActive }
    public var isOnline: Bool { link == .online }
    /// Install mode is open: asked for, and no key installed yet. Once there is a key (from the key file or
    /// a KEYSET) SCBK-D is refused whatever the setting says.
    public var installMode: Bool { configuration.installMode && configuration.key == nil }
    public var pendingReads: Int { pending.count }

    /// The key check value of `key`: the first 3 bytes of AES-ECB(key, 16 zero bytes).
    public func keyCheckValue(_ key: OSDPKey) throws(OSDPCryptoError) -> [UInt8] {
        Array(try crypto.aes.encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3))
    }

    // MARK: - Input

    /// Bytes from the line, received at `now`: one step per frame found (answered or not) plus any
    /// effects of time passing.
    public func receive<C: Collection>(_ bytes: C, at now: MonotonicInstant) -> [OSDPStep] where C.Element == UInt8 {
        var steps: [OSDPStep] = []
        for event in reader.feed(bytes, at: now) {
            switch event {
            case .frame(let frame):
                steps.append(handle(frame, at: now))
            case .badCheck(let length):
                badFrames += 1
                logger.log(.info, "osdp: a \(length)-byte frame with a wrong CRC or checksum was not answered", rateLimitKey: "osdp-bad-check")
            case .badLength(let length):
                badFrames += 1
                logger.log(.info, "osdp: a frame header with length \(length) (allowed \(OSDPWire.headerLength + 2) to \(configuration.receiveBuffer)) was skipped", rateLimitKey: "osdp-bad-length")
            case .interrupted(let received):
                badFrames += 1
                logger.log(.info, "osdp: a frame stopped after \(received) bytes and was dropped", rateLimitKey: "osdp-interrupted")
            }
        }
        return steps
    }

    /// Queues a read for the next poll. When the queue is full the oldest read is dropped.
    public func enqueue(_ read: OSDPCardRead) -> [OSDPEffect] {
        var effects: [OSDPEffect] = []
        pending.append(read)
        while pending.count > configuration.maxPendingReads {
            let old = pending.removeFirst()
            effects.append(.readDropped(seq: old.seq, reason: "more than \(configuration.maxPendingReads) reads waited for a poll"))
        }
        return effects
    }

    /// The tamper switch, the supply and the inputs now. A change is sent to the panel unsolicited, in
    /// the reply to its next poll.
    public func update(_ new: OSDPReaderStatus) {
        if new.tamper != status.tamper || new.powerFailure != status.powerFailure { localStatusDue = true }
        let before = inputStatusData
        status = new
        if inputStatusData != before { inputStatusDue = true }
    }

    public var readerStatus: OSDPReaderStatus { status }

    /// osdp_LSTATR's data: tamper, power (0 normal, 1 tamper / power failure).
    private var localStatusData: [UInt8] { [status.tamper ? 1 : 0, status.powerFailure ? 1 : 0] }

    /// osdp_ISTATR's data: one byte per input (0 inactive, 1 active).
    private var inputStatusData: [UInt8] {
        (0..<configuration.inputCount).map { i in i < status.inputs.count && status.inputs[i] ? 1 : 0 }
    }

    /// Time passing: the panel going quiet (offline, secure channel dropped), reads outliving their TTL, and
    /// a partial file transfer idle for `OSDPFileTransfer.idleTimeoutMs` (dropped, with a warning).
    public func tick(at now: MonotonicInstant) -> [OSDPEffect] {
        var effects: [OSDPEffect] = []
        let since = lastCommandAt ?? startedAt
        let quiet = now.milliseconds(since: since)
        let keptActive = keepActiveUntil.map { now < $0 } ?? false
        if quiet > configuration.offlineAfterMs && link != .offline && !keptActive {
            let seconds = (configuration.offlineAfterMs / 1000).formatted1
            let detail = link == .unknown ? "no command from the panel within \(seconds) s of start"
                                          : "no command from the panel for \(seconds) s"
            link = .offline
            effects.append(.link(online: false, detail: detail))
            if dropChannel() { effects.append(.secureChannel(active: false, detail: "dropped: the panel stopped polling")) }
        }
        effects += dropExpiredReads(at: now)
        if let dropped = fileTransfer.expire(at: now) { logger.warning("osdp: \(dropped)") }
        return effects
    }

    private func dropExpiredReads(at now: MonotonicInstant) -> [OSDPEffect] {
        var effects: [OSDPEffect] = []
        pending.removeAll { read in
            let age = read.ageMilliseconds(at: now)
            guard age > configuration.readTTLMs else { return false }
            let why = link == .online
                ? "waited \(Int(age)) ms for a poll, more than osdp-ttl-ms (\(Int(configuration.readTTLMs)) ms)"
                : "the panel did not poll within osdp-ttl-ms (\(Int(configuration.readTTLMs)) ms)"
            effects.append(.readDropped(seq: read.seq, reason: why))
            return true
        }
        return effects
    }

    /// Forgets a partial frame (after the port was reopened or the speed changed).
    public func resetReader() { reader.reset() }

    // MARK: - One frame

    /// Answers one verified frame.
    public func handle(_ frame: OSDPFrame, at now: MonotonicInstant) -> OSDPStep {
        guard !frame.isReply else { return OSDPStep() }
        let isBroadcast = frame.address == OSDPWire.broadcast
        guard frame.address == configuration.address || isBroadcast else { return OSDPStep() }

        var effects: [OSDPEffect] = []
        lastCommandAt = now
        if let until = keepActiveUntil, now >= until { keepActiveUntil = nil }
        if link != .online {
            link = .online
            effects.append(.link(online: true, detail: "polled at address \(configuration.address)"))
        }
        let mark: [UInt8] = frame.hadMark ? [OSDPWire.mark] : []
        let replyAddress = isBroadcast ? (OSDPWire.broadcast | OSDPWire.replyBit) : (configuration.address | OSDPWire.replyBit)
        let sequence = frame.sequence

        // The very frame answered last, again: the panel missed the reply. Send it again, unchanged, and
        // act on nothing (this holds for sequence 0 too: nothing happened since, so a restart and a retry
        // leave the same state, and a retried LED command or poll must not play or consume twice).
        if let cached, cached.command == frame.bytes {
            framesAnswered += 1
            return OSDPStep(reply: mark + cached.reply, effects: effects)
        }
        if sequence == 0 {
            lastSequence = nil
            cached = nil
            if dropChannel() { effects.append(.secureChannel(active: false, detail: "dropped: the panel restarted the link (sequence 0)")) }
        } else if let last = lastSequence, sequence == last {
            logger.log(.info, "osdp: sequence \(sequence) repeated with a different command: NAK 04", rateLimitKey: "osdp-seq")
            return OSDPStep(reply: mark + plainNak(.sequence, to: replyAddress, frame: frame), effects: effects)
        }
        let expected: UInt8 = lastSequence.map { $0 == 3 ? 1 : $0 + 1 } ?? 0
        if sequence != 0 && sequence != expected {
            logger.log(.info, "osdp: sequence \(sequence) where \(expected) was due: NAK 04", rateLimitKey: "osdp-seq")
            return OSDPStep(reply: mark + plainNak(.sequence, to: replyAddress, frame: frame), effects: effects)
        }

        var exchange = Exchange(frame: frame, replyAddress: replyAddress, now: now)
        process(&exchange)
        effects += exchange.effects
        lastSequence = sequence
        cached = (frame.bytes, exchange.reply)
        framesAnswered += 1
        if let switchTo = exchange.switchTo {
            configuration.address = switchTo.address
            configuration.baud = switchTo.baud
            effects.append(.switchLink(address: switchTo.address, baud: switchTo.baud))
        }
        return OSDPStep(reply: mark + exchange.reply, effects: effects)
    }

    /// One command being answered.
    private struct Exchange {
        let frame: OSDPFrame
        let replyAddress: UInt8
        let now: MonotonicInstant
        var reply: [UInt8] = []
        var effects: [OSDPEffect] = []
        var switchTo: (address: UInt8, baud: Int)?
    }

    private func plainNak(_ code: OSDPNak, to address: UInt8, frame: OSDPFrame) -> [UInt8] {
        OSDPFrameBuilder.build(address: address, sequence: frame.sequence, crc: frame.usesCRC,
                               code: OSDPReply.nak.rawValue, data: [code.rawValue])
    }

    /// Parses the security block, checks and strips the MAC, decrypts, runs the command, builds the reply.
    private func process(_ x: inout Exchange) {
        let body = Array(x.frame.body)
        var securityType: UInt8?
        var securityData: [UInt8] = []
        var rest = body[...]
        if x.frame.hasSecurityBlock {
            let length = Int(body[0])
            guard length >= 2, body.count >= length + 1 else {
                return nak(&x, .commandLength, "a security block of length \(length) does not fit the frame")
            }
            securityType = body[1]
            securityData = Array(body[2..<length])
            rest = body[length...]
        }
        guard let code = rest.popFirst() else { return nak(&x, .commandLength, "no command code") }
        var data = Array(rest)

        if let type = securityType {
            guard configuration.secure != .off else {
                return nak(&x, .unsupportedSecurityBlock, "a security block (type \(hex(type))) while osdp-secure = off")
            }
            switch (type, code) {
            case (OSDPSecurityBlock.challenge.rawValue, OSDPCommand.challenge.rawValue):
                return challenge(&x, selector: securityData.first, data: data)
            case (OSDPSecurityBlock.serverCryptogram.rawValue, OSDPCommand.serverCryptogram.rawValue):
                return serverCryptogram(&x, selector: securityData.first, data: data)
            case (OSDPSecurityBlock.commandMAC.rawValue, _), (OSDPSecurityBlock.commandEncrypted.rawValue, _):
                guard case .active(var session) = channel else {
                    return nak(&x, .securityConditions, "a command with a MAC (type \(hex(type))) but no secure channel")
                }
                guard data.count >= OSDPWire.macLength else { return nak(&x, .commandLength, "no room for the MAC") }
                let macStart = x.frame.bytes.count - x.frame.checkLength - OSDPWire.macLength
                let received = x.frame.bytes[macStart..<(macStart + OSDPWire.macLength)]
                data.removeLast(OSDPWire.macLength)
                do throws(OSDPCryptoError) {
                    let full = try crypto.mac(session.keys, iv: session.replyMAC, message: Array(x.frame.bytes[0..<macStart]))
                    guard OSDPSecureChannelCrypto.constantTimeEqual(full.prefix(OSDPWire.macLength), received) else {
                        _ = dropChannel()
                        x.effects.append(.secureChannel(active: false, detail: "dropped: a command with a wrong MAC"))
                        return nak(&x, .securityConditions, "wrong MAC on command \(hex(code)): secure channel dropped")
                    }
                    session.commandMAC = full
                    if type == OSDPSecurityBlock.commandEncrypted.rawValue {
                        guard let plain = try crypto.decrypt(session.keys, chained: session.replyMAC, data: data) else {
                            _ = dropChannel()
                            x.effects.append(.secureChannel(active: false, detail: "dropped: an encrypted block that does not decrypt"))
                            return nak(&x, .securityConditions, "encrypted data of command \(hex(code)) is not a padded AES block: secure channel dropped")
                        }
                        data = plain
                    }
                } catch {
                    return cryptoFailure(&x, error)
                }
                channel = .active(session)
                // Inside the channel a command's data travels encrypted (SCS_17). Data in clear with only a
                // MAC (SCS_15) is refused and not acted on: a KEYSET's key must never cross the line in clear.
                if type == OSDPSecurityBlock.commandMAC.rawValue && !data.isEmpty {
                    if code == OSDPCommand.keyset.rawValue {
                        logger.warning("osdp: KEYSET with the new key in clear (SCS_15, MAC only) refused with NAK 06; the key is not changed",
                                       rateLimitKey: "osdp-keyset-scs15")
                    }
                    return nak(&x, .securityConditions, "command \(hex(code)) with \(data.count) data bytes in clear (SCS_15) inside the secure channel; data must be encrypted (SCS_17)")
                }
            default:
                return nak(&x, .unsupportedSecurityBlock, "security block type \(hex(type)) with command \(hex(code))")
            }
        } else {
            if channel.isActive {
                _ = dropChannel()
                x.effects.append(.secureChannel(active: false, detail: "dropped: a plain-text command inside the secure channel"))
                return nak(&x, .securityConditions, "plain-text command \(hex(code)) while the secure channel is up: channel dropped")
            }
            if code == OSDPCommand.challenge.rawValue || code == OSDPCommand.serverCryptogram.rawValue {
                return nak(&x, .securityConditions, "command \(hex(code)) without its security block")
            }
            if configuration.secure == .required && code != OSDPCommand.id.rawValue && code != OSDPCommand.capabilities.rawValue {
                return nak(&x, .securityConditions, "command \(hex(code)) in plain text, but osdp-secure = required")
            }
        }
        run(&x, code: code, data: data)
    }

    // MARK: - Commands

    private func run(_ x: inout Exchange, code: UInt8, data: [UInt8]) {
        guard let command = OSDPCommand(rawValue: code) else {
            return nak(&x, .unknownCommand, "command \(hex(code)) is not implemented")
        }
        func length(_ ok: Bool) -> Bool {
            if !ok { nak(&x, .commandLength, "command \(hex(code)) with \(data.count) data bytes") }
            return ok
        }
        switch command {
        case .poll:
            guard length(data.isEmpty) else { return }
            x.effects += dropExpiredReads(at: x.now)
            // A status change first (tamper and power, then the inputs), then the oldest read.
            if localStatusDue {
                localStatusDue = false
                logger.debug("osdp: LSTATR sent unsolicited (tamper \(localStatusData[0]), power \(localStatusData[1]))")
                return reply(&x, .localStatus, localStatusData)
            }
            if inputStatusDue && configuration.inputCount > 0 {
                inputStatusDue = false
                logger.debug("osdp: ISTATR sent unsolicited (\(inputStatusData.map(String.init).joined(separator: " ")))")
                return reply(&x, .inputStatus, inputStatusData)
            }
            while !pending.isEmpty {
                let read = pending.removeFirst()
                let data = read.rawReplyData
                // A frame: header, the security block and MAC inside the channel, the code, the check.
                let frameLength = OSDPWire.headerLength + 1 + data.count + 2 + (channel.isActive ? 2 + OSDPWire.macLength + 16 : 0)
                if let limit = panelReceiveSize, frameLength > limit {
                    x.effects.append(.readDropped(seq: read.seq, reason: "its osdp_RAW reply of up to \(frameLength) bytes is more than the panel receives (ACURXSIZE \(limit))"))
                    continue
                }
                x.effects.append(.readSent(seq: read.seq))
                return reply(&x, .raw, data)
            }
            reply(&x, .ack)
        case .id:
            guard length(data.count == 1) else { return }
            reply(&x, .pdID, configuration.identity.pdidData)
        case .capabilities:
            guard length(data.count == 1) else { return }
            reply(&x, .capabilities, OSDPCapabilities.data(features: configuration.features, secure: configuration.secure,
                                                           defaultKeyAccepted: installMode,
                                                           receiveBuffer: configuration.receiveBuffer,
                                                           inputs: configuration.inputCount))
        case .localStatus:
            guard length(data.isEmpty) else { return }
            localStatusDue = false
            reply(&x, .localStatus, localStatusData)
        case .inputStatus:
            guard length(data.isEmpty) else { return }
            inputStatusDue = false
            reply(&x, .inputStatus, inputStatusData)
        case .manufacturer:
            guard length(data.count >= 3) else { return }
            manufacturer(&x, data)
        case .led:
            guard length(!data.isEmpty && data.count % 14 == 0) else { return }
            var commands: [LEDCommand] = []
            do throws(OSDPFeedbackCommands.Invalid) {
                for start in stride(from: 0, to: data.count, by: 14) {
                    if let c = try OSDPFeedbackCommands.led(data[start..<(start + 14)]) { commands.append(c) }
                }
            } catch {
                return nak(&x, .unableToProcess, "LED: \(error.why)")
            }
            if configuration.features.leds != .none {
                x.effects += commands.map { .feedback(FeedbackCommand(led: $0)) }
            }
            reply(&x, .ack)
        case .buzzer:
            guard length(!data.isEmpty && data.count % 5 == 0) else { return }
            var tones: [ToneCommand] = []
            do throws(OSDPFeedbackCommands.Invalid) {
                for start in stride(from: 0, to: data.count, by: 5) {
                    if let t = try OSDPFeedbackCommands.buzzer(data[start..<(start + 5)]) { tones.append(t) }
                }
            } catch {
                return nak(&x, .unableToProcess, "BUZ: \(error.why)")
            }
            if configuration.features.buzzer {
                x.effects += tones.map { .feedback(FeedbackCommand(tone: $0)) }
            }
            reply(&x, .ack)
        case .text:
            guard length(data.count >= 6 && data.count == 6 + Int(data[5])) else { return }
            x.effects.append(.text(String(decoding: data[6...], as: UTF8.self)))
            reply(&x, .ack)
        case .comset:
            guard length(data.count == 5) else { return }
            comset(&x, data)
        case .keyset:
            guard length(data.count == 18) else { return }
            keyset(&x, data)
        case .maxReplySize:
            guard length(data.count == 2) else { return }
            let size = Int(data[0]) | Int(data[1]) << 8
            guard size >= Self.smallestPanelReceiveSize else {
                return nak(&x, .unableToProcess, "ACURXSIZE \(size): a panel must receive at least \(Self.smallestPanelReceiveSize) bytes")
            }
            panelReceiveSize = size
            logger.info("osdp: the panel receives frames of up to \(size) bytes (ACURXSIZE)")
            reply(&x, .ack)
        case .keepActive:
            guard length(data.count == 2) else { return }
            let ms = Double(Int(data[0]) | Int(data[1]) << 8)
            keepActiveUntil = x.now.adding(milliseconds: ms)
            logger.info("osdp: KEEPACTIVE: the panel may stay silent for \(Int(ms)) ms")
            reply(&x, .ack)
        case .challenge, .serverCryptogram:
            nak(&x, .securityConditions, "command \(hex(code)) with the wrong security block")
        case .fileTransfer:
            let outcome = fileTransfer.receive(data, at: x.now)
            if let expired = outcome.expired { logger.warning("osdp: \(expired)") }
            if let note = outcome.note {
                if outcome.refused { logger.warning("osdp: \(note)", rateLimitKey: "osdp-file\(outcome.status.detail.rawValue)") } else { logger.notice("osdp: \(note)") }
            }
            if let file = outcome.completed { x.effects.append(.configFileReceived(file)) }
            reply(&x, .fileTransferStatus, outcome.status.data)
        case .outputStatus:
            guard length(data.isEmpty) else { return }
            outputControl(&x, data: nil)
        case .output:
            guard length(!data.isEmpty && data.count % OSDPOutputControl.recordLength == 0) else { return }
            outputControl(&x, data: data)
        case .abort:
            // osdp_ABORT: stop the operation in progress. The only one this PD has is a file transfer (it
            // has no multi-part replies, no biometric or PIV operations), so that is what it drops.
            guard length(data.isEmpty) else { return }
            if let dropped = fileTransfer.abort() { logger.notice("osdp: \(dropped)") }
            reply(&x, .ack)
        case .readerStatus:
            nak(&x, .unknownCommand, "command \(hex(code)) is not implemented by this reader")
        }
    }

    /// The smallest ACURXSIZE taken: a PDCAP reply inside the secure channel must fit.
    static let smallestPanelReceiveSize = 64

    /// osdp_MFG command 0x01 of ScanGate's own vendor code: osdp_MFGREP with the build id.
    public static let manufacturerBuildID: UInt8 = 0x01

    /// osdp_MFG: vendor code (3 bytes LE), then the vendor's command. ScanGate answers one command of its
    /// own vendor code, 0x01 (the build id, in osdp_MFGREP: vendor code, 0x01, the id in ASCII); any other
    /// vendor code or command is NAK 09 (unable to process) and changes nothing.
    private func manufacturer(_ x: inout Exchange, _ data: [UInt8]) {
        let vendor = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16
        guard vendor == configuration.identity.vendorCode else {
            return nak(&x, .unableToProcess, "MFG for vendor code \(Hex.string(Array(data[0..<3].reversed()))), not this reader's")
        }
        guard data.count == 4, data[3] == Self.manufacturerBuildID else {
            return nak(&x, .unableToProcess, "MFG command \(data.count > 3 ? hex(data[3]) : "none") with \(data.count - 3) bytes: only 0x01 (build id, no data) is defined")
        }
        var text = Array(configuration.buildID.utf8.prefix(64))
        if let limit = panelReceiveSize {
            let room = max(0, limit - (OSDPWire.headerLength + 1 + 4 + 2 + (channel.isActive ? 2 + OSDPWire.macLength + 16 : 0)))
            text = Array(text.prefix(room))
        }
        reply(&x, .manufacturer, Array(data[0..<3]) + [Self.manufacturerBuildID] + text)
    }

    /// osdp_OUT's records (`data`; drive the outputs, reply osdp_OSTATR with the commanded levels) or
    /// osdp_OSTAT (nil). The parsing is `OSDPOutputControl`'s; a PD without outputs NAKs both (09).
    private func outputControl(_ x: inout Exchange, data: [UInt8]?) {
        let outputs = configuration.features.outputs
        var levels = outputLevels()
        levels = Array((levels + [Bool](repeating: false, count: max(0, outputs - levels.count))).prefix(outputs))
        guard let data else {
            guard outputs > 0 else { return nak(&x, .unableToProcess, "OSTAT: this reader has no outputs (no door relay configured)") }
            return reply(&x, .outputStatus, OSDPOutputControl.statusData(levels))
        }
        let commands: [OSDPRelayCommand]
        do throws(OSDPOutputControl.Invalid) {
            commands = try OSDPOutputControl.parse(data[...], outputs: outputs)
        } catch {
            return nak(&x, .unableToProcess, "OUT: \(error.why)")
        }
        for i in levels.indices {
            levels[i] = OSDPOutputControl.levelAfter(commands, output: UInt8(i), active: levels[i])
        }
        x.effects += commands.map { .drive($0) }
        reply(&x, .outputStatus, OSDPOutputControl.statusData(levels))
    }

    private func comset(_ x: inout Exchange, _ data: [UInt8]) {
        let wantedAddress = data[0]
        let wantedBaud = Int(data[1]) | Int(data[2]) << 8 | Int(data[3]) << 16 | Int(data[4]) << 24
        let current = (address: configuration.address, baud: configuration.baud)
        func keep(_ why: String) {
            logger.warning("osdp: COMSET to address \(wantedAddress) at \(wantedBaud) baud not applied: \(why); osdp_COM repeats address \(current.address) at \(current.baud) baud",
                           rateLimitKey: "osdp-comset")
            reply(&x, .com, [current.address] + le32(current.baud))
        }
        guard wantedAddress <= 126 else { return keep("address \(wantedAddress) is not 0 to 126") }
        guard OSDPWire.baudRates.contains(wantedBaud) else {
            return keep("\(wantedBaud) baud is not an OSDP speed (\(OSDPWire.baudRates.map(String.init).joined(separator: ", ")))")
        }
        if wantedAddress == current.address && wantedBaud == current.baud {
            return reply(&x, .com, [current.address] + le32(current.baud))
        }
        do throws(OSDPStoreError) {
            try store.storeLink(address: wantedAddress, baud: wantedBaud)
        } catch {
            logger.error("osdp: COMSET could not be saved: \(error)")
            return keep("saving it failed")
        }
        logger.notice("osdp: the panel set address \(wantedAddress) at \(wantedBaud) baud (COMSET); switching after the reply")
        reply(&x, .com, [wantedAddress] + le32(wantedBaud))
        x.switchTo = (wantedAddress, wantedBaud)
    }

    private func keyset(_ x: inout Exchange, _ data: [UInt8]) {
        guard case .active(let session) = channel else {
            return nak(&x, .securityConditions, "KEYSET outside the secure channel")
        }
        guard data[0] == 1, data[1] == 16, let key = OSDPKey(bytes: Array(data[2..<18])) else {
            return nak(&x, .unableToProcess, "KEYSET with key type \(data[0]) and length \(data[1]) (only type 1, an SCBK of 16 bytes)")
        }
        do throws(OSDPCryptoError) {
            let check = try keyCheckValue(key)
            do throws(OSDPStoreError) {
                if let problem = try store.installKey(key, check: check) { logger.error("osdp: KEYSET: \(problem)") }
            } catch {
                logger.error("osdp: KEYSET: the new key could not be saved: \(error)")
                return nak(&x, .unableToProcess, "KEYSET: saving the key failed")
            }
            logger.notice("osdp: the panel installed a new secure channel key (check value \(Hex.string(check)))"
                          + (session.usesDefaultKey ? "; install mode is over" : ""))
        } catch {
            return cryptoFailure(&x, error)
        }
        // The ACK still goes out in the current session; then the new key applies and the panel opens a
        // new channel with it.
        reply(&x, .ack)
        configuration.key = key
        configuration.installMode = false
        _ = dropChannel()
        x.effects.append(.keyInstalled)
        x.effects.append(.secureChannel(active: false, detail: "closed after KEYSET: the panel reopens it with the new key"))
    }

    private func challenge(_ x: inout Exchange, selector: UInt8?, data: [UInt8]) {
        guard data.count == 8 else { return nak(&x, .commandLength, "CHLNG with \(data.count) bytes (8)") }
        if dropChannel() {
            x.effects.append(.secureChannel(active: false, detail: "restarted by the panel (CHLNG)"))
        }
        let scbk: OSDPKey
        switch selector {
        case 1?:
            guard let key = configuration.key else {
                return nak(&x, .securityConditions, "CHLNG for the SCBK, but none is installed (install mode takes SCBK-D)")
            }
            scbk = key
        case 0?:
            if configuration.key != nil {
                logger.warning("osdp: a CHLNG for the default key SCBK-D was refused with NAK 06: a key is installed"
                               + (configuration.installMode ? ", so install mode is over" : ""),
                               rateLimitKey: "osdp-scbkd-with-key")
                return nak(&x, .securityConditions, "CHLNG for SCBK-D while a key is installed")
            }
            guard configuration.installMode else {
                return nak(&x, .securityConditions, "CHLNG for SCBK-D outside install mode")
            }
            scbk = .installDefault
        default:
            return nak(&x, .securityConditions, "CHLNG with key selector \(selector.map(hex) ?? "none") (0 or 1)")
        }
        do throws(OSDPCryptoError) {
            let rndB = try random(8)
            let keys = try crypto.sessionKeys(scbk: scbk, rndA: data)
            let cryptogram = try crypto.clientCryptogram(keys, rndA: data, rndB: rndB)
            channel = .challenged(OSDPHandshake(keys: keys, rndA: data, rndB: rndB, keySelector: selector ?? 1))
            x.reply = OSDPFrameBuilder.build(address: x.replyAddress, sequence: x.frame.sequence, crc: x.frame.usesCRC,
                                             securityBlock: [3, OSDPSecurityBlock.clientCryptogram.rawValue, selector ?? 1],
                                             code: OSDPReply.clientCryptogram.rawValue,
                                             data: configuration.identity.clientUID + rndB + cryptogram)
        } catch {
            cryptoFailure(&x, error)
        }
    }

    private func serverCryptogram(_ x: inout Exchange, selector: UInt8?, data: [UInt8]) {
        guard data.count == 16 else { return nak(&x, .commandLength, "SCRYPT with \(data.count) bytes (16)") }
        guard case .challenged(let handshake) = channel else {
            return nak(&x, .securityConditions, "SCRYPT without a CHLNG before it")
        }
        guard selector == handshake.keySelector else {
            channel = .inactive
            return nak(&x, .securityConditions, "SCRYPT for another key than its CHLNG")
        }
        do throws(OSDPCryptoError) {
            let expected = try crypto.serverCryptogram(handshake.keys, rndA: handshake.rndA, rndB: handshake.rndB)
            guard OSDPSecureChannelCrypto.constantTimeEqual(expected, data) else {
                channel = .inactive
                return nak(&x, .securityConditions, "the panel's cryptogram does not match: it holds another key")
            }
            let rmac = try crypto.initialReplyMAC(handshake.keys, serverCryptogram: data)
            let defaultKey = handshake.keySelector == 0
            channel = .active(OSDPSession(keys: handshake.keys, replyMAC: rmac, commandMAC: rmac, usesDefaultKey: defaultKey))
            x.reply = OSDPFrameBuilder.build(address: x.replyAddress, sequence: x.frame.sequence, crc: x.frame.usesCRC,
                                             securityBlock: [3, OSDPSecurityBlock.initialReplyMAC.rawValue, 1],
                                             code: OSDPReply.initialReplyMAC.rawValue, data: rmac)
            x.effects.append(.secureChannel(active: true, detail: defaultKey ? "up with SCBK-D (install mode)" : "up"))
        } catch {
            cryptoFailure(&x, error)
        }
    }

    // MARK: - Replies

    /// Builds the reply; inside the secure channel it gets a MAC (and its data is encrypted).
    private func reply(_ x: inout Exchange, _ code: OSDPReply, _ data: [UInt8] = []) {
        guard case .active(var session) = channel else {
            x.reply = OSDPFrameBuilder.build(address: x.replyAddress, sequence: x.frame.sequence, crc: x.frame.usesCRC,
                                             code: code.rawValue, data: data)
            return
        }
        do throws(OSDPCryptoError) {
            let body = data.isEmpty ? [] : try crypto.encrypt(session.keys, chained: session.commandMAC, data: data)
            let type = data.isEmpty ? OSDPSecurityBlock.replyMAC : OSDPSecurityBlock.replyEncrypted
            var failure: OSDPCryptoError?
            let keys = session.keys, chained = session.commandMAC
            var full: [UInt8] = []
            x.reply = OSDPFrameBuilder.build(address: x.replyAddress, sequence: x.frame.sequence, crc: x.frame.usesCRC,
                                             securityBlock: [2, type.rawValue], code: code.rawValue, data: body) { message in
                do throws(OSDPCryptoError) {
                    full = try self.crypto.mac(keys, iv: chained, message: message)
                } catch {
                    failure = error
                }
                return Array(full.prefix(OSDPWire.macLength))
            }
            if let failure { throw failure }
            session.replyMAC = full
            channel = .active(session)
        } catch {
            cryptoFailure(&x, error)
        }
    }

    /// A NAK, inside the channel when it is still up.
    private func nak(_ x: inout Exchange, _ code: OSDPNak, _ why: String) {
        logger.log(.info, "osdp: \(code): \(why)", rateLimitKey: "osdp-nak-\(code.rawValue)")
        reply(&x, .nak, [code.rawValue])
    }

    private func cryptoFailure(_ x: inout Exchange, _ error: OSDPCryptoError) {
        logger.error("osdp: \(error); secure channel dropped")
        if dropChannel() { x.effects.append(.secureChannel(active: false, detail: "dropped: \(error)")) }
        x.reply = plainNak(.securityConditions, to: x.replyAddress, frame: x.frame)
    }

    /// Ends the session or handshake; true if a session was up.
    @discardableResult
    private func dropChannel() -> Bool {
        let wasActive = channel.isActive
        channel = .inactive
        return wasActive
    }

    private func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    private func hex(_ b: UInt8) -> String { "0x" + Hex.string([b]) }
}

extension Double {
    var formatted1: String {
        let tenths = Int((self * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}

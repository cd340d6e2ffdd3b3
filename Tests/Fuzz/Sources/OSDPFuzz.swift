import Core
import OSDP
import Platform
import Settings

/// The OSDP reader facing a hostile bus: anything a wire can carry, from any address, in any timing,
/// through the frame reader, the secure channel and the PD state machine.
///
/// Input: one byte of set-up (secure mode, install mode, a key or none, address 0 or 5), then chunks of
/// `[delay][length][bytes...]` (the clock moves `delay` × 40 ms before the chunk; delay 0xFF queues a
/// read instead). The key and the PD's random number are those of the secure-channel vectors
/// (Tests/ScanGateTests/Fixtures/osdp-sc-vectors.json), so seeds replaying those sessions reach deep
/// into the channel and mutations start from valid MACs.
///
/// Under `secure = required` every frame is judged by `ChannelModel`, the panel's side of the secure
/// channel kept here from the frames and replies on the wire (the PD's own state is not consulted): a
/// frame is authenticated when its MAC is the one the key and the chain give, or it is the SCRYPT whose
/// cryptogram the key and the last CHLNG give. Any effect of a frame that is not (feedback, text, a read
/// sent or dropped, a COMSET switch, a key installed, a relay driven by osdp_OUT, the channel coming up,
/// a key or link written to the store) aborts.
enum OSDPFuzz {
    static let scbk = OSDPKey(bytes: Array(0x40...0x4F))!
    static let rndB: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7]
    static let identity = OSDPIdentity(vendorCode: 0x0A0B0C, model: 0x21, version: 1, serial: 0x11223344, firmware: [1, 2, 3])

    /// A store that writes nothing and records every write (the key file, the state file).
    final class RecordingStore: OSDPStore {
        enum Write: Equatable { case key(OSDPKey), link(address: UInt8, baud: Int) }
        private(set) var writes: [Write] = []
        func installKey(_ key: OSDPKey, check: [UInt8]) throws(OSDPStoreError) -> String? { writes.append(.key(key)); return nil }
        func storeLink(address: UInt8, baud: Int) throws(OSDPStoreError) { writes.append(.link(address: address, baud: baud)) }
    }

    /// What one input reached (for the seed check, `Tests/Fuzz/run`).
    struct Reach {
        /// Frames the model judged authenticated (a good MAC in the chain, or the SCRYPT of the last CHLNG).
        var authenticated = 0
        /// Effects and store writes that needed an authenticated frame under secure = required (and had one).
        var checkedEffects = 0
    }

    @Sendable static func run(_ bytes: [UInt8]) { _ = drive(bytes) }

    /// What the seeds must reach (`ScanGateFuzz --seed-reach`): otherwise the check above holds vacuously.
    static let steps = ["a frame the model authenticates", "an effect that needs authentication, under secure = required"]

    @Sendable static func reach(_ bytes: [UInt8]) -> Set<String> {
        let r = drive(bytes)
        return Set([r.authenticated > 0 ? steps[0] : nil, r.checkedEffects > 0 ? steps[1] : nil].compactMap { $0 })
    }

    static func drive(_ bytes: [UInt8]) -> Reach {
        let setup = bytes.first ?? 0
        let secure: OSDPSecureMode = [.required, .optional, .off, .required][Int(setup & 3)]
        let configuration = OSDPPeripheralConfiguration(
            address: setup & 0x10 != 0 ? 5 : 0, baud: 9600, secure: secure,
            installMode: secure != .off && setup & 0x04 != 0, key: setup & 0x08 == 0 ? scbk : nil,
            identity: identity, features: OSDPReaderFeatures(leds: .redGreen, buzzer: true, outputs: 1),
            offlineAfterMs: 8000, readTTLMs: 5000, receiveBuffer: 512, maxPendingReads: 4)
        let logger = Logger(level: .error, sink: { _ in })
        var clock = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let random: (Int) throws(OSDPCryptoError) -> [UInt8] = { n throws(OSDPCryptoError) in Array(rndB.prefix(n)) }
        // A: frames found by a separate reader, handed over one by one, every reply checked against its
        // command. B: the same bytes through the PD's own reader; it must answer exactly like A.
        let storeA = RecordingStore(), storeB = RecordingStore()
        guard let a = try? OSDPPeripheral(configuration: configuration, store: storeA, logger: logger, now: clock, random: random),
              let b = try? OSDPPeripheral(configuration: configuration, store: storeB, logger: logger, now: clock, random: random),
              var model = try? ChannelModel(key: configuration.key)
        else { require(false, "the PD could not be built"); return Reach() }
        var reader = OSDPFrameReader(maxFrameLength: 512)
        var offered = 0
        var sent: Set<UInt64> = []
        var reach = Reach()

        func account(_ effects: [OSDPEffect]) {
            for effect in effects {
                if case .readSent(let seq) = effect {
                    require(!sent.contains(seq), "read #\(seq) sent twice")
                    sent.insert(seq)
                }
            }
        }

        var position = 1
        while position < bytes.count {
            let delay = bytes[position]
            let length = position + 1 < bytes.count ? Int(bytes[position + 1]) : 0
            let start = min(position + 2, bytes.count)
            let chunk = bytes[start..<min(start + length, bytes.count)]
            position = start + length
            if delay == 0xFF {
                offered += 1
                let read = OSDPCardRead.raw(seq: UInt64(offered), bytes: chunk.isEmpty ? [0x41] : Array(chunk.prefix(64)), emittedAt: clock)
                account(a.enqueue(read))
                _ = b.enqueue(read)
                continue
            }
            clock = clock.adding(milliseconds: Double(delay) * 40)
            account(a.tick(at: clock))
            _ = b.tick(at: clock)

            var stepsA: [OSDPStep] = []
            for event in reader.feed(chunk, at: clock) {
                guard case .frame(let frame) = event else { continue }
                let ownAddress = a.address
                let writesBefore = storeA.writes.count
                let verdict = model.judge(frame, ownAddress: ownAddress)
                if verdict != .none { reach.authenticated += 1 }
                let step = a.handle(frame, at: clock)
                stepsA.append(step)
                account(step.effects)
                let writes = Array(storeA.writes[writesBefore...])
                if secure == .required {
                    reach.checkedEffects += checkAuthenticated(step.effects, writes, verdict: verdict, frame: frame)
                }
                model.learn(frame: frame, verdict: verdict, reply: step.reply, writes: writes)
                guard let reply = step.reply else { continue }
                check(reply: reply, to: frame, ownAddress: ownAddress)
            }
            let stepsB = b.receive(chunk, at: clock)
            require(stepsA.compactMap(\.reply) == stepsB.compactMap(\.reply),
                    "the PD's own reader answered differently: \(stepsA.compactMap(\.reply)) vs \(stepsB.compactMap(\.reply))")
            require(stepsA.map(\.effects) == stepsB.map(\.effects),
                    "the PD's own reader acted differently: \(stepsA.map(\.effects)) vs \(stepsB.map(\.effects))")
            require(storeA.writes == storeB.writes, "the PD's own reader wrote differently: \(storeA.writes) vs \(storeB.writes)")
            require(a.pendingReads <= 4, "pending reads not bounded: \(a.pendingReads)")
        }
        require(sent.count <= offered, "more reads sent (\(sent.count)) than offered (\(offered))")
        return reach
    }

    /// secure = required: what a frame may do unless it passed the secure channel. A frame that did not
    /// may bring the link online (osdp_ID and osdp_CAP are answered in plain text before the handshake) and
    /// may close the channel (sequence 0, a CHLNG, a plain or wrongly MACed command end it, as the spec
    /// says); nothing else. Returns how many effects and writes it held to the verdict.
    static func checkAuthenticated(_ effects: [OSDPEffect], _ writes: [RecordingStore.Write], verdict: ChannelModel.Verdict,
                                   frame: OSDPFrame) -> Int {
        let shown = "frame \(Hex.string(frame.bytes))"
        var gated = 0
        for effect in effects {
            switch effect {
            case .link, .secureChannel(active: false, _):
                continue
            case .secureChannel(active: true, _):
                require(verdict == .serverCryptogram, "secure = required: the channel came up on a frame that is not the SCRYPT of the last CHLNG (\(verdict)): \(shown)")
            case .feedback, .text, .readSent, .readDropped, .switchLink, .keyInstalled, .configFileReceived, .drive:
                require(verdict == .mac, "secure = required: \(effect) from a frame without a good MAC (\(verdict)): \(shown)")
            }
            gated += 1
        }
        for write in writes {
            require(verdict == .mac, "secure = required: the store was written (\(write)) by a frame without a good MAC (\(verdict)): \(shown)")
            gated += 1
        }
        return gated
    }

    /// The panel's side of the secure channel, kept from the wire: the key (the configured one, then what a
    /// KEYSET stored), the last CHLNG answered with a CCRYPT, and the MAC chain (the last reply MAC, the
    /// last good command MAC). It judges each command before the PD sees it. It uses the PD's AES and
    /// key-derivation functions (checked against the spec's vectors in the unit tests), not its state.
    /// Where it can lose the chain it only errs towards "authenticated", so it never accuses a good frame.
    struct ChannelModel {
        enum Verdict: Equatable { case none, mac, serverCryptogram }

        let crypto: OSDPSecureChannelCrypto
        var key: OSDPKey?
        var handshake: (keys: OSDPSessionKeys, rndA: [UInt8], selector: UInt8)?
        var session: (keys: OSDPSessionKeys, replyMAC: [UInt8], commandMAC: [UInt8])?
        /// The full MAC of the frame just judged `.mac`, for its reply.
        var pendingCommandMAC: [UInt8]?

        init(key: OSDPKey?) throws(OSDPCryptoError) {
            crypto = OSDPSecureChannelCrypto(aes: try AES128())
            self.key = key
        }

        /// Security block type, its data, the code, the data after it (MAC included), for a whole frame.
        static func parts(_ bytes: [UInt8]) -> (type: UInt8?, block: [UInt8], code: UInt8, data: [UInt8])? {
            guard bytes.count > OSDPWire.headerLength else { return nil }
            let checkLength = bytes[4] & 0x04 != 0 ? 2 : 1
            guard bytes.count >= OSDPWire.headerLength + checkLength + 1 else { return nil }
            var body = bytes[OSDPWire.headerLength..<(bytes.count - checkLength)]
            var type: UInt8?
            var block: [UInt8] = []
            if bytes[4] & OSDPWire.securityBlockFlag != 0 {
                guard let length = body.first.map(Int.init), length >= 2, body.count >= length + 1 else { return nil }
                type = body[body.startIndex + 1]
                block = Array(body[(body.startIndex + 2)..<(body.startIndex + length)])
                body = body.dropFirst(length)
            }
            guard let code = body.popFirst() else { return nil }
            return (type, block, code, Array(body))
        }

        /// The frame's full MAC chained from `iv`, when its 4 MAC bytes match it.
        func goodMAC(_ bytes: [UInt8], keys: OSDPSessionKeys, iv: [UInt8]) -> [UInt8]? {
            let checkLength = bytes[4] & 0x04 != 0 ? 2 : 1
            let macStart = bytes.count - checkLength - OSDPWire.macLength
            guard macStart > OSDPWire.headerLength,
                  let full = try? crypto.mac(keys, iv: iv, message: Array(bytes[0..<macStart])),
                  Array(full.prefix(OSDPWire.macLength)) == Array(bytes[macStart..<(macStart + OSDPWire.macLength)])
            else { return nil }
            return full
        }

        mutating func judge(_ frame: OSDPFrame, ownAddress: UInt8) -> Verdict {
            pendingCommandMAC = nil
            guard !frame.isReply, frame.address == ownAddress || frame.address == OSDPWire.broadcast,
                  let p = Self.parts(frame.bytes), let type = p.type else { return .none }
            switch type {
            case OSDPSecurityBlock.commandMAC.rawValue, OSDPSecurityBlock.commandEncrypted.rawValue:
                guard let session, p.data.count >= OSDPWire.macLength,
                      let full = goodMAC(frame.bytes, keys: session.keys, iv: session.replyMAC) else { return .none }
                pendingCommandMAC = full
                return .mac
            case OSDPSecurityBlock.serverCryptogram.rawValue where p.code == OSDPCommand.serverCryptogram.rawValue:
                guard let handshake, p.block.first == handshake.selector, p.data.count == 16,
                      let expected = try? crypto.serverCryptogram(handshake.keys, rndA: handshake.rndA, rndB: OSDPFuzz.rndB),
                      expected == p.data else { return .none }
                return .serverCryptogram
            default:
                return .none
            }
        }

        /// Follows the handshake and the chain from the PD's reply, and the key from the store.
        mutating func learn(frame: OSDPFrame, verdict: Verdict, reply: [UInt8]?, writes: [RecordingStore.Write]) {
            defer {
                for case .key(let k) in writes { key = k }
            }
            guard var reply else { return }
            if frame.hadMark, reply.first == OSDPWire.mark { reply.removeFirst() }
            guard let r = Self.parts(reply), let f = Self.parts(frame.bytes) else { return }
            switch (f.type, r.type) {
            case (.some(OSDPSecurityBlock.challenge.rawValue), .some(OSDPSecurityBlock.clientCryptogram.rawValue)):
                // A CCRYPT: the PD took this CHLNG with the key its selector names.
                guard f.code == OSDPCommand.challenge.rawValue, f.data.count == 8, let selector = f.block.first else { return }
                let scbk = selector == 0 ? OSDPKey.installDefault : key
                if let scbk, let keys = try? crypto.sessionKeys(scbk: scbk, rndA: f.data) {
                    handshake = (keys, f.data, selector)
                }
            case (_, .some(OSDPSecurityBlock.initialReplyMAC.rawValue)):
                guard verdict == .serverCryptogram, let handshake,
                      let rmac = try? crypto.initialReplyMAC(handshake.keys, serverCryptogram: f.data) else { return }
                session = (handshake.keys, rmac, rmac)
            case (_, .some(OSDPSecurityBlock.replyMAC.rawValue)), (_, .some(OSDPSecurityBlock.replyEncrypted.rawValue)):
                // The reply chains from the command's MAC (or, for a reply that was not to a good command,
                // from the last good one's).
                guard var session else { return }
                let iv = pendingCommandMAC ?? session.commandMAC
                guard let full = goodMAC(reply, keys: session.keys, iv: iv) else { return }
                session.commandMAC = iv
                session.replyMAC = full
                self.session = session
            default:
                return
            }
        }
    }

    /// A reply is one well-formed frame, for the command's sequence and check type, from this PD's reply
    /// address (or 0xFF for a broadcast), and only for commands to this PD or the broadcast address.
    static func check(reply: [UInt8], to frame: OSDPFrame, ownAddress: UInt8) {
        require(frame.address == ownAddress || frame.address == OSDPWire.broadcast,
                "answered a frame for address \(frame.address) (own \(ownAddress))")
        require(!frame.isReply, "answered another PD's reply")
        var body = reply[...]
        if frame.hadMark {
            require(body.first == OSDPWire.mark, "no mark before a reply to a marked command")
            body = body.dropFirst()
        }
        var parser = OSDPFrameReader(maxFrameLength: 0xFFFF)
        let events = parser.feed(body, at: MonotonicInstant(nanoseconds: 0))
        guard events.count == 1, case .frame(let parsed) = events[0], parsed.bytes == Array(body) else {
            return require(false, "the reply is not exactly one valid frame: \(Array(body)) -> \(events)")
        }
        let expectedAddress = frame.address == OSDPWire.broadcast ? 0xFF : ownAddress | OSDPWire.replyBit
        require(parsed.address == expectedAddress, "reply address \(parsed.address), expected \(expectedAddress)")
        require(parsed.sequence == frame.sequence, "reply sequence \(parsed.sequence) for command sequence \(frame.sequence)")
        require(parsed.usesCRC == frame.usesCRC, "reply check type differs from the command's")
    }
}

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
enum OSDPFuzz {
    static let scbk = OSDPKey(bytes: Array(0x40...0x4F))!
    static let rndB: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7]
    static let identity = OSDPIdentity(vendorCode: 0x0A0B0C, model: 0x21, version: 1, serial: 0x11223344, firmware: [1, 2, 3])

    final class Store: OSDPStore {
        func installKey(_ key: OSDPKey, check: [UInt8]) throws(OSDPStoreError) {}
        func storeLink(address: UInt8, baud: Int) throws(OSDPStoreError) {}
    }

    @Sendable static func run(_ bytes: [UInt8]) {
        let setup = bytes.first ?? 0
        let secure: OSDPSecureMode = [.required, .optional, .off, .required][Int(setup & 3)]
        let configuration = OSDPPeripheralConfiguration(
            address: setup & 0x10 != 0 ? 5 : 0, baud: 9600, secure: secure,
            installMode: secure != .off && setup & 0x04 != 0, key: setup & 0x08 == 0 ? scbk : nil,
            identity: identity, features: OSDPReaderFeatures(leds: .redGreen, buzzer: true),
            offlineAfterMs: 8000, readTTLMs: 5000, receiveBuffer: 512, maxPendingReads: 4)
        let logger = Logger(level: .error, sink: { _ in })
        var clock = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let random: (Int) throws(OSDPCryptoError) -> [UInt8] = { n throws(OSDPCryptoError) in Array(rndB.prefix(n)) }
        // A: frames found by a separate reader, handed over one by one, every reply checked against its
        // command. B: the same bytes through the PD's own reader; it must answer exactly like A.
        guard let a = try? OSDPPeripheral(configuration: configuration, store: Store(), logger: logger, now: clock, random: random),
              let b = try? OSDPPeripheral(configuration: configuration, store: Store(), logger: logger, now: clock, random: random)
        else { return require(false, "the PD could not be built") }
        var reader = OSDPFrameReader(maxFrameLength: 512)
        var offered = 0
        var sent: Set<UInt64> = []

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

            var repliesA: [[UInt8]] = []
            for event in reader.feed(chunk, at: clock) {
                guard case .frame(let frame) = event else { continue }
                let ownAddress = a.address
                let step = a.handle(frame, at: clock)
                account(step.effects)
                guard let reply = step.reply else { continue }
                repliesA.append(reply)
                check(reply: reply, to: frame, ownAddress: ownAddress)
            }
            let repliesB = b.receive(chunk, at: clock).compactMap(\.reply)
            require(repliesA == repliesB, "the PD's own reader answered differently: \(repliesA) vs \(repliesB)")
            require(a.pendingReads <= 4, "pending reads not bounded: \(a.pendingReads)")
        }
        require(sent.count <= offered, "more reads sent (\(sent.count)) than offered (\(offered))")
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

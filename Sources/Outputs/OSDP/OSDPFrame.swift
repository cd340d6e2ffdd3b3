import Platform

/// One frame whose length and check character were verified: the bytes from SOM to the last check byte
/// (a leading mark is not part of them; `hadMark` says whether one came).
public struct OSDPFrame: Equatable, Sendable {
    public let bytes: [UInt8]
    public let hadMark: Bool

    /// `bytes` must be a whole frame (as `OSDPFrameReader` hands them over).
    init(verified bytes: [UInt8], hadMark: Bool) {
        self.bytes = bytes
        self.hadMark = hadMark
    }

    public var address: UInt8 { bytes[1] }
    public var control: UInt8 { bytes[4] }
    public var sequence: UInt8 { control & OSDPWire.sequenceMask }
    public var usesCRC: Bool { control & OSDPWire.crcFlag != 0 }
    public var hasSecurityBlock: Bool { control & OSDPWire.securityBlockFlag != 0 }
    /// True for a reply (another PD answering on a shared bus): a PD never acts on one.
    public var isReply: Bool { address & OSDPWire.replyBit != 0 }
    /// The bytes between the header and the check character: [security block], code, data, [MAC].
    public var body: ArraySlice<UInt8> { bytes[OSDPWire.headerLength..<(bytes.count - checkLength)] }
    public var checkLength: Int { usesCRC ? 2 : 1 }
}

/// Builds a frame: header, optional security block, code, data, optional MAC, check character.
public enum OSDPFrameBuilder {
    /// Returns the frame from SOM on (callers put the mark in front when they send one). `mac`, when
    /// given, receives the frame so far (SOM to the end of the data, length field already final) and
    /// returns the 4 MAC bytes to append.
    public static func build(address: UInt8, sequence: UInt8, crc: Bool, securityBlock: [UInt8]? = nil,
                             code: UInt8, data: [UInt8] = [], mac: (([UInt8]) -> [UInt8])? = nil) -> [UInt8] {
        var control = sequence & OSDPWire.sequenceMask
        if crc { control |= OSDPWire.crcFlag }
        if securityBlock != nil { control |= OSDPWire.securityBlockFlag }
        let length = OSDPWire.headerLength + (securityBlock?.count ?? 0) + 1 + data.count
            + (mac == nil ? 0 : OSDPWire.macLength) + (crc ? 2 : 1)
        var frame: [UInt8] = [OSDPWire.startOfMessage, address, UInt8(truncatingIfNeeded: length),
                              UInt8(truncatingIfNeeded: length >> 8), control]
        frame.reserveCapacity(length)
        if let securityBlock { frame += securityBlock }
        frame.append(code)
        frame += data
        if let mac { frame += mac(frame).prefix(OSDPWire.macLength) }
        frame += OSDPCheck.field(frame, crc: crc)
        return frame
    }
}

/// What the reader found in the byte stream, besides whole frames: kept for logs and counters.
public enum OSDPFrameEvent: Equatable, Sendable {
    /// A whole frame with a good check character (from any address, in either direction).
    case frame(OSDPFrame)
    /// A frame-sized run of bytes whose CRC or checksum was wrong. The frame is not answered: nothing in
    /// it can be trusted, its address included (the spec: "if the checksum is good, only the PD that
    /// matches the address field processes the message"). The reader looks for the next SOM inside it.
    case badCheck(length: Int)
    /// A header whose length field is below the smallest frame or above the largest packet any device
    /// may send: not a frame start. Nothing is buffered for it; the reader looks for the next SOM.
    case badLength(length: Int)
    /// A frame stopped arriving mid-way for longer than the inter-character timeout: dropped.
    case interrupted(received: Int)
}

/// Finds frames in the bytes of a serial line. Resynchronises on SOM (0x53), takes an optional mark
/// (0xFF) just before it, checks the 2-byte little-endian length (SOM to the end of the check character)
/// against the smallest frame and `maxFrameLength` before buffering anything more, then the CRC-16 or
/// checksum. After a bad length or a bad check it looks for the next SOM among the bytes it already has,
/// so a genuine frame that follows noise (or sits inside a corrupted one) is still found. Memory is
/// bounded by `maxFrameLength`.
public struct OSDPFrameReader: Sendable {
    public let maxFrameLength: Int
    /// A frame whose bytes stop for longer than this is abandoned. The spec's nominal value is 20 ms and
    /// "may need to be adjusted for special channel timing"; USB adapters deliver in bursts (FTDI's
    /// latency timer is 16 ms) and a user-space reader adds its own jitter, so the default is 50 ms,
    /// still far inside the 200 ms after which a CP retries.
    public let interCharacterTimeoutMs: Double

    /// The candidate frame, from its SOM on.
    private var candidate: [UInt8] = []
    private var candidateHadMark = false
    /// The byte before the current scan position (to see a mark before SOM).
    private var previous: UInt8?
    private var lastByteAt: MonotonicInstant?

    public init(maxFrameLength: Int = OSDPWire.maximumPacketLength, interCharacterTimeoutMs: Double = 50) {
        self.maxFrameLength = max(OSDPWire.headerLength + 3, min(maxFrameLength, 0xFFFF))
        self.interCharacterTimeoutMs = interCharacterTimeoutMs
        candidate.reserveCapacity(64)
    }

    /// True while part of a frame is buffered.
    public var isInsideFrame: Bool { !candidate.isEmpty }

    /// Takes bytes received at `now`; returns what they completed, in order.
    public mutating func feed<C: Collection>(_ bytes: C, at now: MonotonicInstant) -> [OSDPFrameEvent]
    where C.Element == UInt8 {
        var events: [OSDPFrameEvent] = []
        if !candidate.isEmpty, let last = lastByteAt, now.milliseconds(since: last) > interCharacterTimeoutMs {
            events.append(.interrupted(received: candidate.count + (candidateHadMark ? 1 : 0)))
            candidate.removeAll(keepingCapacity: true)
            previous = nil
        }
        if !bytes.isEmpty { lastByteAt = now }
        var pending = Array(bytes)[...]
        while let byte = pending.popFirst() {
            if let replay = take(byte, into: &events) {
                pending = replay + pending
            }
        }
        return events
    }

    /// Drops a partial frame (the port was reopened, the line speed changed).
    public mutating func reset() {
        candidate.removeAll(keepingCapacity: true)
        previous = nil
        lastByteAt = nil
    }

    /// One byte. Returns bytes to scan again (after a rejected candidate: everything after its SOM).
    private mutating func take(_ byte: UInt8, into events: inout [OSDPFrameEvent]) -> ArraySlice<UInt8>? {
        if candidate.isEmpty {
            if byte == OSDPWire.startOfMessage {
                candidate.append(byte)
                candidateHadMark = previous == OSDPWire.mark
            }
            previous = byte
            return nil
        }
        candidate.append(byte)
        if candidate.count == OSDPWire.headerLength {
            let length = declaredLength
            if length < smallestFrame || length > maxFrameLength {
                events.append(.badLength(length: length))
                return rescan()
            }
        }
        guard candidate.count >= OSDPWire.headerLength, candidate.count == declaredLength else { return nil }
        let crc = candidate[4] & OSDPWire.crcFlag != 0
        let checkLength = crc ? 2 : 1
        let covered = candidate[0..<(candidate.count - checkLength)]
        if Array(candidate[(candidate.count - checkLength)...]) == OSDPCheck.field(covered, crc: crc) {
            events.append(.frame(OSDPFrame(verified: candidate, hadMark: candidateHadMark)))
            candidate.removeAll(keepingCapacity: true)
            previous = nil
            return nil
        }
        events.append(.badCheck(length: candidate.count))
        return rescan()
    }

    private var declaredLength: Int { Int(candidate[2]) | Int(candidate[3]) << 8 }

    /// The shortest frame the control byte allows: header, code, check character (and a 2-byte
    /// security block when the flag says one is there).
    private var smallestFrame: Int {
        let control = candidate[4]
        return OSDPWire.headerLength + 1 + (control & OSDPWire.crcFlag != 0 ? 2 : 1)
            + (control & OSDPWire.securityBlockFlag != 0 ? 2 : 0)
    }

    /// Gives up the current candidate: its SOM was not a frame start. The bytes after that SOM are
    /// scanned again (the SOM itself becomes the "previous" byte, which is not a mark).
    private mutating func rescan() -> ArraySlice<UInt8> {
        let rest = candidate.dropFirst()
        previous = OSDPWire.startOfMessage
        let replay = ArraySlice(Array(rest))
        candidate.removeAll(keepingCapacity: true)
        return replay
    }
}

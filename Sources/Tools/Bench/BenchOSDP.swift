import CShim
import Core
import Decoding
import OSDP
import Platform
import Synchronization
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// OSDP reply time: the spec gives a PD 200 ms from the end of a command to its reply. The bench runs an
/// `OSDPOutput` (the daemon's own, on its link thread) on a pseudo-terminal and plays the panel itself:
/// it writes POLL frames to the controller side and stamps the time from handing the POLL to the kernel
/// (its last byte leaves in that write) to reading the reply's first byte. With `decodeFrames`, a thread decodes those frames with
/// zbar meanwhile (the decode queue's work), so the figure is the reply time while a frame decodes.
public enum BenchOSDP {
    public struct Result: Sendable {
        public var polls: Int
        /// Replies received (an ACK for each POLL when all goes well).
        public var replies: Int
        public var p50Ms: Double
        public var p99Ms: Double
        public var maxMs: Double
        /// Replies later than the spec's limit (or missing).
        public var late: Int
        /// Frames the concurrent decode thread got through during the run.
        public var decodes: Int
        public static let limitMs = 200.0
    }

    /// `intervalMs` paces the polls like a panel (libosdp's CP polls every 50 ms), so the link thread
    /// sleeps between them and the decode thread runs, as in the field.
    public static func pollLatency(polls: Int = 200, intervalMs: Double = 50, decodeFrames: [Frame] = [],
                                   decoderSettings: DecoderSettings = DecoderSettings()) throws -> Result {
        var controller: Int32 = -1, device: Int32 = -1
        var name = [CChar](repeating: 0, count: 128)
        guard shim_openpty(&controller, &device, &name, name.count) == 0 else { throw SystemError("openpty", "bench OSDP", .current) }
        defer {
            close(controller)
            close(device)
        }
        // Raw from the start: the tty's default echo must not answer a POLL before the output opened it.
        var attributes = termios()
        if tcgetattr(device, &attributes) == 0 {
            cfmakeraw(&attributes)
            _ = tcsetattr(device, TCSANOW, &attributes)
        }
        var template = Array("/tmp/scangate-bench-osdp-XXXXXX".utf8CString)
        guard let dirPointer = mkdtemp(&template) else { throw SystemError("mkdtemp", "/tmp", .current) }
        let directory = String(cString: dirPointer)
        defer {
            unlink(directory + "/state")
            rmdir(directory)
        }

        var settings = OSDPSettings()
        settings.device = cText(name)
        settings.vendorCode = 0x0A0B0C
        settings.secure = .off
        settings.stateFile = directory + "/state"
        settings.scbkFile = directory + "/scbk"
        settings.serial = 1
        let quiet = Logger(level: .error)
        let output = try OSDPOutput(settings: settings, features: OSDPReaderFeatures(leds: .none, buzzer: false),
                                    feedback: NoFeedback(), linkObserver: NoLinkObserver(), logger: quiet)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }

        // The concurrent decoding, as the decode queue would do it.
        let stop = Atomic<Bool>(false)
        let decoded = Atomic<Int>(0)
        var loadThread: PosixThread?
        if !decodeFrames.isEmpty {
            let decoder = try ZbarDecoder(settings: decoderSettings)
            let box = DecoderBox(decoder: decoder, frames: decodeFrames)
            loadThread = try PosixThread(name: "bench-decode") {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    _ = box.decoder.decode(box.frames[i % box.frames.count])
                    decoded.add(1, ordering: .relaxed)
                    i += 1
                }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            loadThread?.join()
        }

        // Wait until the output has opened the device (its first reply proves it).
        var sequence: UInt8 = 0
        var latencies: [Double] = []
        var replies = 0, late = 0
        let ready = MonotonicInstant.now().adding(milliseconds: 5000)
        while MonotonicInstant.now() < ready {
            if exchange(controller, sequence: 0) != nil { break }
        }
        sequence = 1
        for _ in 0..<polls {
            sleepThread(milliseconds: intervalMs)
            if let ms = exchange(controller, sequence: sequence) {
                replies += 1
                latencies.append(ms)
                if ms > Result.limitMs { late += 1 }
                sequence = sequence == 3 ? 1 : sequence + 1
            } else {
                late += 1
                sequence = 0  // no reply: start the link again, as a panel would
            }
        }
        let p = Percentiles(latencies)
        return Result(polls: polls, replies: replies, p50Ms: p.at(50), p99Ms: p.at(99), maxMs: p.sorted.last ?? .nan,
                      late: late, decodes: decoded.load(ordering: .relaxed))
    }

    /// Rows for `scangate bench`'s table.
    public static func rows(_ r: Result, label: String) -> [BenchReport.Row] {
        [
            BenchReport.Row(name: "OSDP POLL → reply, p50 (\(label))", measured: "\(fmt(r.p50Ms, 2)) ms",
                            target: "< \(Int(Result.limitMs)) ms (spec)", pass: r.p50Ms < Result.limitMs),
            BenchReport.Row(name: "OSDP POLL → reply, p99 (\(label))", measured: "\(fmt(r.p99Ms, 2)) ms (max \(fmt(r.maxMs, 2)))",
                            target: "< \(Int(Result.limitMs)) ms (spec)", pass: r.p99Ms < Result.limitMs && r.late == 0),
        ]
    }

    /// Writes one POLL (with the mark, CRC) and waits up to 1 s for the whole ACK; returns the time from
    /// the POLL's last byte to the reply's first byte.
    private static func exchange(_ fd: Int32, sequence: UInt8) -> Double? {
        let poll = [OSDPWire.mark] + OSDPFrameBuilder.build(address: 0, sequence: sequence, crc: true, code: OSDPCommand.poll.rawValue)
        var scratch = [UInt8](repeating: 0, count: 256)
        // Anything left from an earlier reply is not this one's.
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while Glibc.poll(&entry, 1, 0) > 0 { if read(fd, &scratch, scratch.count) <= 0 { break } }
        // Stamped just before the write: the write call hands the last byte over, and a stamp after it
        // could land after the reply when this thread is preempted (so the figure is an upper bound).
        let sent = MonotonicInstant.now()
        guard FileDescriptor(rawValue: fd).writeAll(poll).isSuccess else { return nil }
        let deadline = sent.adding(milliseconds: 1000)
        var first: MonotonicInstant?
        var received: [UInt8] = []
        let expected = [OSDPWire.mark] + OSDPFrameBuilder.build(address: 0x80, sequence: sequence, crc: true, code: OSDPReply.ack.rawValue)
        while received.count < expected.count {
            let remaining = deadline.milliseconds(since: .now())
            guard remaining > 0 else { return nil }
            entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&entry, 1, Int32(remaining.rounded(.up))) > 0 else { continue }
            let n = read(fd, &scratch, scratch.count)
            guard n > 0 else { continue }
            if first == nil { first = .now() }
            received += scratch[0..<n]
        }
        // Only the PD's ACK for this POLL counts (not an echo, not a NAK).
        guard received == expected else { return nil }
        return first.map { $0.milliseconds(since: sent) }
    }
}

private final class DecoderBox: @unchecked Sendable {
    let decoder: ZbarDecoder
    let frames: [Frame]
    init(decoder: ZbarDecoder, frames: [Frame]) {
        self.decoder = decoder
        self.frames = frames
    }
}

private final class NoFeedback: FeedbackSink {
    func play(_ request: FeedbackRequest, origin: String) {}
}

private final class NoLinkObserver: ControllerLinkObserver {
    func controllerLink(_ output: String, online: Bool, detail: String) {}
}

private extension Result {
    var isSuccess: Bool { if case .success = self { return true } else { return false } }
}

#if canImport(Glibc)
import Glibc
#endif
import Platform

/// One open ALSA playback PCM (the owner of its `snd_pcm_t *`): signed 16-bit samples, mono when the
/// device takes it (else stereo, the same sample on both channels), 48000 Hz or the nearest rate the
/// device accepts, short buffers. Opened non-blocking so a busy or missing device fails at once, and kept
/// non-blocking: writes take what fits and `waitWritable` waits with a timeout, so the playback thread
/// can always notice a stop request. Used from one thread only; closed exactly once.
public final class PCMDevice {
    public let name: String
    /// The rate the device runs at (what samples must be rendered for).
    public let sampleRate: Int
    public let channels: Int

    public static let preferredRate: UInt32 = 48_000
    /// Buffer latency asked of snd_pcm_set_params: short, so a beep starts and stops quickly.
    public static let defaultLatencyMicroseconds: UInt32 = 30_000

    /// Underruns recovered so far (-EPIPE: the device ran out of samples, so what it played has a gap).
    public private(set) var underruns = 0

    private let calls: any ALSACalls
    private var handle: OpaquePointer?
    private var interleaved: [Int16] = []

    /// Opens `name` (the system configuration, or `configuration` via snd_pcm_open_lconf) and sets it up.
    public init(name: String, calls: any ALSACalls, configuration: ALSAConfiguration? = nil,
                latencyMicroseconds: UInt32 = PCMDevice.defaultLatencyMicroseconds) throws(ALSAError) {
        self.name = name
        self.calls = calls
        let opened = calls.pcmOpen(name, nonBlocking: true, config: configuration?.handle)
        guard opened.code >= 0, let pcm = opened.pcm else {
            throw ALSAError("snd_pcm_open", device: name, code: opened.code < 0 ? opened.code : -EINVAL,
                            message: calls.errorText(opened.code < 0 ? opened.code : -EINVAL))
        }
        handle = pcm
        // Mono first; a device that only plays stereo (many USB and HDMI outputs on hw:) gets two channels.
        var lastCode: Int32 = 0
        var chosen = 0
        for count in [1, 2] {
            lastCode = calls.pcmSetParams(pcm, channels: UInt32(count), rate: Self.preferredRate,
                                          latencyMicroseconds: latencyMicroseconds)
            if lastCode == 0 { chosen = count; break }
        }
        guard chosen > 0 else {
            let error = ALSAError("snd_pcm_set_params (S16_LE, mono or stereo, \(Self.preferredRate) Hz)",
                                  device: name, code: lastCode, message: calls.errorText(lastCode))
            _ = calls.pcmClose(pcm)
            handle = nil
            throw error
        }
        channels = chosen
        let current = calls.pcmCurrentRate(pcm)
        guard current.code == 0, current.rate > 0 else {
            let code = current.code < 0 ? current.code : -EINVAL
            _ = calls.pcmClose(pcm)
            handle = nil
            throw ALSAError("snd_pcm_hw_params_get_rate", device: name, code: code, message: calls.errorText(code))
        }
        sampleRate = Int(current.rate)
    }

    deinit { _ = try? close() }

    public var isOpen: Bool { handle != nil }

    /// Writes what the device takes now from mono `samples`; returns the frames written (0: the buffer is
    /// full, call `waitWritable`). An underrun (-EPIPE) or a suspend (-ESTRPIPE) is recovered with
    /// snd_pcm_recover and reported as 0 frames written.
    public func write(_ samples: ArraySlice<Int16>) throws(ALSAError) -> Int {
        let pcm = try open("snd_pcm_writei")
        guard !samples.isEmpty else { return 0 }
        switch calls.pcmState(pcm) {
        case .setup: try check(calls.pcmPrepare(pcm), "snd_pcm_prepare")
        case .xrun: try recover(-EPIPE, after: "snd_pcm_writei")
        case .suspended: try recover(-ESTRPIPE, after: "snd_pcm_writei")
        case .disconnected: throw error("snd_pcm_writei", -ENODEV)
        default: break
        }
        let written: Int
        if channels == 1 {
            written = samples.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return 0 }
                return calls.pcmWritei(pcm, base, frames: samples.count)
            }
        } else {
            interleaved.removeAll(keepingCapacity: true)
            for sample in samples { for _ in 0..<channels { interleaved.append(sample) } }
            written = interleaved.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return 0 }
                return calls.pcmWritei(pcm, base, frames: samples.count)
            }
        }
        if written >= 0 { return written }
        let code = Int32(written)
        if code == -EAGAIN { return 0 }
        try recover(code, after: "snd_pcm_writei")
        return 0
    }

    /// Waits until the device takes more samples or `timeoutMilliseconds` pass; false on timeout.
    @discardableResult
    public func waitWritable(timeoutMilliseconds: Int32) throws(ALSAError) -> Bool {
        let pcm = try open("snd_pcm_wait")
        let result = calls.pcmWait(pcm, timeoutMilliseconds: timeoutMilliseconds)
        if result > 0 { return true }
        if result == 0 { return false }
        try recover(result, after: "snd_pcm_wait")
        return true
    }

    /// Lets what was written play out (snd_pcm_drain, non-blocking), polling until it has, or drops the
    /// rest when `milliseconds` pass first.
    public func drain(within milliseconds: Double) throws(ALSAError) {
        let pcm = try open("snd_pcm_drain")
        let code = calls.pcmDrain(pcm)
        if code == 0 { return }
        guard code == -EAGAIN else {
            if code == -EPIPE || code == -ESTRPIPE {  // nothing left to play: the stream ran dry
                try drop()
                return
            }
            throw error("snd_pcm_drain", code)
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: milliseconds)
        while calls.pcmState(pcm) == .draining {
            if MonotonicInstant.now() >= deadline {
                try drop()
                return
            }
            sleepThread(milliseconds: 2)
        }
    }

    /// Stops at once, discarding what was not played yet (snd_pcm_drop).
    public func drop() throws(ALSAError) {
        let pcm = try open("snd_pcm_drop")
        try check(calls.pcmDrop(pcm), "snd_pcm_drop")
    }

    /// Closes the PCM (snd_pcm_close); afterwards every call fails with EBADFD. Closing twice does nothing.
    public func close() throws(ALSAError) {
        guard let pcm = handle else { return }
        handle = nil
        try check(calls.pcmClose(pcm), "snd_pcm_close")
    }

    // MARK: - Helpers

    private func open(_ operation: String) throws(ALSAError) -> OpaquePointer {
        guard let pcm = handle else { throw error(operation, -EBADFD) }
        return pcm
    }

    private func recover(_ code: Int32, after operation: String) throws(ALSAError) {
        guard let pcm = handle else { throw error(operation, -EBADFD) }
        guard code == -EPIPE || code == -ESTRPIPE || code == -EINTR else { throw error(operation, code) }
        if code == -EPIPE { underruns += 1 }
        let recovered = calls.pcmRecover(pcm, code)
        guard recovered >= 0 else {
            throw ALSAError("snd_pcm_recover after \(operation) failed with \(calls.errorText(code)),",
                            device: name, code: recovered, message: calls.errorText(recovered))
        }
    }

    private func check(_ code: Int32, _ operation: String) throws(ALSAError) {
        if code < 0 { throw error(operation, code) }
    }

    private func error(_ operation: String, _ code: Int32) -> ALSAError {
        ALSAError(operation, device: name, code: code, message: calls.errorText(code))
    }
}

import CALSA
import CShim

/// The real libasound behind `ALSACalls`. Creating it installs ALSA's silent error handler once, so
/// libasound never prints to stderr (a missing card is reported in the beep feedback's own log instead).
public struct LibASound: ALSACalls {
    public init() {
        shim_alsa_silence_errors()
    }

    public func pcmOpen(_ name: String, nonBlocking: Bool, config: OpaquePointer?) -> (code: Int32, pcm: OpaquePointer?) {
        var pcm: OpaquePointer?
        let mode = nonBlocking ? Int32(SND_PCM_NONBLOCK) : 0
        let code = name.withCString { cName in
            if let config {
                return snd_pcm_open_lconf(&pcm, cName, SND_PCM_STREAM_PLAYBACK, mode, config)
            }
            return snd_pcm_open(&pcm, cName, SND_PCM_STREAM_PLAYBACK, mode)
        }
        return (code, code < 0 ? nil : pcm)
    }

    public func pcmSetParams(_ pcm: OpaquePointer, channels: UInt32, rate: UInt32, latencyMicroseconds: UInt32) -> Int32 {
        snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, channels, rate, 1,
                           latencyMicroseconds)
    }

    public func pcmCurrentRate(_ pcm: OpaquePointer) -> (code: Int32, rate: UInt32) {
        var params: OpaquePointer?
        let allocated = snd_pcm_hw_params_malloc(&params)
        guard allocated == 0, let params else { return (allocated < 0 ? allocated : -12, 0) }
        defer { snd_pcm_hw_params_free(params) }
        let current = snd_pcm_hw_params_current(pcm, params)
        guard current == 0 else { return (current, 0) }
        var rate: UInt32 = 0
        var direction: Int32 = 0
        let got = snd_pcm_hw_params_get_rate(params, &rate, &direction)
        return (got, rate)
    }

    public func pcmPrepare(_ pcm: OpaquePointer) -> Int32 { snd_pcm_prepare(pcm) }

    public func pcmWritei(_ pcm: OpaquePointer, _ buffer: UnsafeRawPointer, frames: Int) -> Int {
        snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(frames))
    }

    public func pcmRecover(_ pcm: OpaquePointer, _ error: Int32) -> Int32 { snd_pcm_recover(pcm, error, 1) }

    public func pcmWait(_ pcm: OpaquePointer, timeoutMilliseconds: Int32) -> Int32 {
        snd_pcm_wait(pcm, timeoutMilliseconds)
    }

    public func pcmState(_ pcm: OpaquePointer) -> PCMState {
        switch snd_pcm_state(pcm) {
        case SND_PCM_STATE_OPEN: return .open
        case SND_PCM_STATE_SETUP: return .setup
        case SND_PCM_STATE_PREPARED: return .prepared
        case SND_PCM_STATE_RUNNING: return .running
        case SND_PCM_STATE_XRUN: return .xrun
        case SND_PCM_STATE_DRAINING: return .draining
        case SND_PCM_STATE_PAUSED: return .paused
        case SND_PCM_STATE_SUSPENDED: return .suspended
        case SND_PCM_STATE_DISCONNECTED: return .disconnected
        default: return .other
        }
    }

    public func pcmDrain(_ pcm: OpaquePointer) -> Int32 { snd_pcm_drain(pcm) }
    public func pcmDrop(_ pcm: OpaquePointer) -> Int32 { snd_pcm_drop(pcm) }
    public func pcmClose(_ pcm: OpaquePointer) -> Int32 { snd_pcm_close(pcm) }

    public func errorText(_ code: Int32) -> String {
        guard let text = snd_strerror(code) else { return "ALSA error \(code)" }
        return String(cString: text)
    }
}

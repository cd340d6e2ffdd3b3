/// The raw libasound calls the beep uses, behind one seam (after apple/swift-system): `LibASound`
/// calls ALSA, unit tests substitute a fake. Return values are ALSA's own: 0 or a count on success,
/// a negative errno-style code on failure. Handles are `snd_pcm_t *` / `snd_config_t *`.
public protocol ALSACalls: Sendable {
    /// snd_pcm_open (config nil) or snd_pcm_open_lconf, for playback.
    func pcmOpen(_ name: String, nonBlocking: Bool, config: OpaquePointer?) -> (code: Int32, pcm: OpaquePointer?)
    /// snd_pcm_set_params with S16_LE, interleaved read/write access and software resampling allowed.
    func pcmSetParams(_ pcm: OpaquePointer, channels: UInt32, rate: UInt32, latencyMicroseconds: UInt32) -> Int32
    /// The rate the device actually runs at after set_params (snd_pcm_hw_params_current + get_rate).
    func pcmCurrentRate(_ pcm: OpaquePointer) -> (code: Int32, rate: UInt32)
    func pcmPrepare(_ pcm: OpaquePointer) -> Int32
    /// snd_pcm_writei: frames written, or a negative code (-EAGAIN when non-blocking and full).
    func pcmWritei(_ pcm: OpaquePointer, _ buffer: UnsafeRawPointer, frames: Int) -> Int
    /// snd_pcm_recover, silently (the beep feedback logs what matters itself).
    func pcmRecover(_ pcm: OpaquePointer, _ error: Int32) -> Int32
    /// snd_pcm_wait: 1 ready, 0 timeout, negative code on error (-EPIPE, -ESTRPIPE).
    func pcmWait(_ pcm: OpaquePointer, timeoutMilliseconds: Int32) -> Int32
    func pcmState(_ pcm: OpaquePointer) -> PCMState
    func pcmDrain(_ pcm: OpaquePointer) -> Int32
    func pcmDrop(_ pcm: OpaquePointer) -> Int32
    func pcmClose(_ pcm: OpaquePointer) -> Int32
    /// snd_strerror.
    func errorText(_ code: Int32) -> String
}

/// snd_pcm_state_t, as far as the beep cares.
public enum PCMState: Sendable, Equatable {
    case open, setup, prepared, running, xrun, draining, paused, suspended, disconnected, other
}

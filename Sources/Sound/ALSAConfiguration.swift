import CALSA
import CShim

/// An ALSA configuration tree loaded from text, owned here (snd_config_delete on deinit). Used to open a
/// PCM defined in-process with snd_pcm_open_lconf instead of the system's asound.conf, e.g.
/// `pcm.beeptest { type file; file "/tmp/x.raw"; format raw; slave { pcm { type null } } }`.
/// Immutable after loading; ALSA only reads it while opening a PCM.
public final class ALSAConfiguration: @unchecked Sendable {
    /// The `snd_config_t *` top node.
    public let handle: OpaquePointer

    public init(text: String) throws(ALSAError) {
        shim_alsa_silence_errors()
        var top: OpaquePointer?
        var code = snd_config_top(&top)
        guard code == 0, let top else { throw Self.error("snd_config_top", code) }
        var input: OpaquePointer?
        let bytes = Array(text.utf8)
        code = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                snd_input_buffer_open(&input, chars.baseAddress, chars.count)
            }
        }
        guard code == 0, let input else {
            snd_config_delete(top)
            throw Self.error("snd_input_buffer_open", code)
        }
        code = snd_config_load(top, input)
        snd_input_close(input)
        guard code == 0 else {
            snd_config_delete(top)
            throw Self.error("snd_config_load", code)
        }
        handle = top
    }

    deinit { snd_config_delete(handle) }

    private static func error(_ operation: String, _ code: Int32) -> ALSAError {
        ALSAError(operation, device: "(in-process configuration)", code: code, message: LibASound().errorText(code))
    }
}

/// A failed ALSA call: the operation, the PCM name, ALSA's negative error code and its text
/// (snd_strerror): "snd_pcm_open hw:99: No such file or directory (-2)".
public struct ALSAError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let device: String
    /// Negative errno-style code as ALSA returns it (-EBUSY, -ENOENT, ...).
    public let code: Int32
    public let message: String

    public init(_ operation: String, device: String, code: Int32, message: String) {
        self.operation = operation
        self.device = device
        self.code = code
        self.message = message
    }

    public var description: String { "\(operation) \(device): \(message) (\(code))" }
}

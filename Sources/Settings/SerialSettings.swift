import Platform
import Core

/// What the user chose for the door-controller serial line (the `[serial]` section). nil path: no serial.
/// Runtime state (the open port, pending events) lives in `SerialOutput`.
public struct SerialSettings: SettingsSection {
    /// `/dev/ttyUSB0`, `/dev/serial/by-id/...`, `/dev/ttyAMA0`.
    public var path: String? = nil
    public var baud: SerialBaudRate = .default9600
    public var format: SerialLineFormat = .eightNoneOne
    /// Hardware flow control (CRTSCTS).
    public var rtscts = false
    /// RS-485 mode of the UART (TIOCSRS485, RTS high while sending).
    public var rs485 = false
    public var framing: SerialFraming = .plain
    public var prefix: [UInt8] = []
    /// nil: the framing's default (CR LF for plain, nothing for stx-etx).
    public var suffix: [UInt8]? = nil
    public var checksum: SerialChecksum = .none
    public var payloadEncoding: SerialPayloadEncoding = .text
    /// Put "QR:", "EAN13:", ... before the payload.
    public var symbologyPrefix = false
    public var unsafeBytes: UnsafeBytePolicy = .reject
    /// An event older than this when it could be sent is dropped, never sent late.
    public var ttlMs: Int = 5000
    /// A frame not written (and transmitted) within this bound is abandoned.
    public var writeTimeoutMs: Int = 1000
    /// The controller's reply lines (`serial-reply-grant`, `serial-reply-deny`): a line equal to one
    /// plays grant or deny. Both empty: replies are not read.
    public var replyGrant: [UInt8] = []
    public var replyDeny: [UInt8] = []
    /// A reply counts only while the last code sent is at most this old.
    public var replyTimeoutMs: Int = 3000

    public init() {}

    public var effectiveSuffix: [UInt8] { suffix ?? framing.defaultSuffix }

    /// "/dev/ttyUSB0 9600 8N1 plain": for logs.
    public var summary: String {
        var parts = ["\(path ?? "-")", "\(baud) \(format)", framing.rawValue]
        if checksum != .none { parts.append(checksum.rawValue) }
        if rtscts { parts.append("rtscts") }
        if rs485 { parts.append("rs485") }
        return parts.joined(separator: " ")
    }

}

extension RunSettings {
    public var serial: SerialSettings {
        get { self[SerialSettings.self] }
        set { self[SerialSettings.self] = newValue }
    }
}

extension SerialSettings {
    /// Checks the combination of options; each error names the options and what is allowed. The one check
    /// that needs the frame encoder (the bytes it generates) is `SerialOutput.validate`, in Outputs/Serial.
    public func validate() throws(UsageError) {
        if checksum != .none && framing != .stxEtx {
            throw UsageError("--serial-checksum \(checksum.rawValue) needs --serial-framing stx-etx")
        }
        if framing == .plain && effectiveSuffix.isEmpty {
            throw UsageError("--serial-suffix: plain framing needs a suffix that ends each frame (default \\r\\n)")
        }
        if rs485 && rtscts {
            throw UsageError("--serial-rs485 and --serial-rtscts cannot be combined (RS-485 drives RTS for the transmitter)")
        }
        for (name, bytes) in [("--serial-prefix", prefix), ("--serial-suffix", effectiveSuffix)] {
            if let b = bytes.first(where: { Int($0) >= format.byteLimit }) {
                throw UsageError("\(name): byte 0x\(Hex.string([b])) does not fit \(format.dataBits) data bits (--serial-format \(format))")
            }
        }
        if !replyGrant.isEmpty && replyGrant == replyDeny {
            throw UsageError("--serial-reply-grant and --serial-reply-deny are the same line; a reply could not say which it means")
        }
    }
}

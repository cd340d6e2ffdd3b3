import Core
import Platform
import Settings

extension SerialSettings {
    /// Checks the combination of options; each error names the options and what is allowed.
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
        let delimiters = Set(prefix + effectiveSuffix)
        for (generated, source) in SerialFrameEncoder(settings: self).generatedBytes {
            if let b = generated.first(where: { Int($0) >= format.byteLimit }) {
                throw UsageError("--serial-format \(format): '\(CEscapedText.render([b]))' from \(source) does not fit \(format.dataBits) data bits")
            }
            if let b = generated.first(where: { delimiters.contains($0) }) {
                let name = prefix.contains(b) ? "--serial-prefix" : "--serial-suffix"
                throw UsageError("\(name): '\(CEscapedText.render([b]))' also appears in \(source), so a payload could fake a frame boundary; use control bytes such as \\r\\n")
            }
        }
    }
}

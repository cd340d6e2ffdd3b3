import Core

extension OptionTable {
    public static let serial: [OptionSpec] = [
        OptionSpec("serial", .serial, .value(placeholder: "PATH"), default: "",
                   help: "send one frame per code to the door controller on this tty (/dev/ttyUSB0, /dev/serial/by-id/...); unset: no serial",
                   apply: { s, v in
                       let path = v.trimmingSpaces
                       guard !path.isEmpty else { throw OptionValueError("is empty; give a tty path such as /dev/ttyUSB0") }
                       s.serial.path = path
                   },
                   show: { $0.serial.path ?? "" }),
        OptionSpec("serial-baud", .serial, .value(placeholder: "N"), default: "9600",
                   help: "line speed: \(SerialBaudRate.allowedText)",
                   apply: { s, v in
                       guard let n = Int(v.trimmingSpaces), let rate = SerialBaudRate(n) else {
                           throw OptionValueError("'\(v)' is not a standard rate (allowed: \(SerialBaudRate.allowedText))")
                       }
                       s.serial.baud = rate
                   },
                   show: { String($0.serial.baud.bitsPerSecond) }),
        OptionSpec("serial-format", .serial, .value(placeholder: "FORMAT"), default: "8N1",
                   help: "data bits 5-8, parity N|E|O, stop bits 1|2: 8N1, 7E1, 8E1, 8O1, 7O1, 7N1, 8N2, ...",
                   apply: { s, v in
                       guard let format = SerialLineFormat(v.trimmingSpaces) else {
                           throw OptionValueError("'\(v)' is not a character format (\(SerialLineFormat.allowedText))")
                       }
                       s.serial.format = format
                   },
                   show: { $0.serial.format.description }),
        OptionSpec("serial-rtscts", .serial, .flag, default: "false",
                   help: "hardware flow control (RTS/CTS)",
                   apply: { s, v in s.serial.rtscts = try ParseValue.bool(v) },
                   show: { String($0.serial.rtscts) }),
        OptionSpec("serial-rs485", .serial, .flag, default: "false",
                   help: "RS-485 mode of the UART (TIOCSRS485; RTS drives the transceiver while sending)",
                   apply: { s, v in s.serial.rs485 = try ParseValue.bool(v) },
                   show: { String($0.serial.rs485) }),
        OptionSpec("serial-framing", .serial, .value(placeholder: "FRAMING"), default: "plain",
                   help: "plain: PREFIX BODY SUFFIX; stx-etx: PREFIX <STX> BODY <ETX> [CHECKSUM] SUFFIX",
                   apply: { s, v in
                       s.serial.framing = try ParseValue.choice(v, SerialFraming.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.serial.framing.rawValue }),
        OptionSpec("serial-prefix", .serial, .value(placeholder: "TEXT"), default: "",
                   help: "bytes before each frame; C escapes \(CEscapedText.allowedText)",
                   apply: { s, v in s.serial.prefix = try OptionTable.delimiter(v) },
                   show: { CEscapedText.render($0.serial.prefix) }),
        OptionSpec("serial-suffix", .serial, .value(placeholder: "TEXT"), default: "auto",
                   help: "bytes after each frame; auto: \\r\\n for plain, nothing for stx-etx; C escapes \(CEscapedText.allowedText)",
                   apply: { s, v in
                       s.serial.suffix = v.trimmingSpaces == "auto" ? nil : try OptionTable.delimiter(v)
                   },
                   show: { $0.serial.suffix.map(CEscapedText.render) ?? "auto" }),
        OptionSpec("serial-checksum", .serial, .value(placeholder: "CHECK"), default: "none",
                   help: "stx-etx check after ETX over the bytes after STX up to and including ETX, as ASCII hex: none, lrc (XOR, 2 digits), crc16 (CRC-16/CCITT-FALSE, 4 digits), crc16-modbus (CRC-16/MODBUS, 4 digits)",
                   apply: { s, v in
                       s.serial.checksum = try ParseValue.choice(v, SerialChecksum.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.serial.checksum.rawValue }),
        OptionSpec("serial-payload", .serial, .value(placeholder: "ENCODING"), default: "text",
                   help: "text: the code's bytes; hex: two upper-case hex digits per byte (always safe)",
                   apply: { s, v in
                       s.serial.payloadEncoding = try ParseValue.choice(v, SerialPayloadEncoding.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.serial.payloadEncoding.rawValue }),
        OptionSpec("serial-symbology-prefix", .serial, .flag, default: "false",
                   help: "put the code type before the payload: QR:, EAN13:, CODE128:, ...",
                   apply: { s, v in s.serial.symbologyPrefix = try ParseValue.bool(v) },
                   show: { String($0.serial.symbologyPrefix) }),
        OptionSpec("serial-unsafe", .serial, .value(placeholder: "POLICY"), default: "reject",
                   help: "text payload with control bytes, prefix/suffix bytes or invalid UTF-8: reject (not sent, error feedback), escape (\\xNN), strip",
                   apply: { s, v in
                       s.serial.unsafeBytes = try ParseValue.choice(v, UnsafeBytePolicy.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.serial.unsafeBytes.rawValue }),
        OptionSpec("serial-ttl-ms", .serial, .value(placeholder: "MS"), default: "5000",
                   help: "a code older than this when it could be sent is dropped, never sent late",
                   apply: { s, v in s.serial.ttlMs = try ParseValue.int(v, in: 100...600_000) },
                   show: { String($0.serial.ttlMs) }),
        OptionSpec("serial-write-timeout-ms", .serial, .value(placeholder: "MS"), default: "1000",
                   help: "a frame not written and transmitted within this time is abandoned and logged",
                   apply: { s, v in s.serial.writeTimeoutMs = try ParseValue.int(v, in: 10...60_000) },
                   show: { String($0.serial.writeTimeoutMs) }),
        OptionSpec("serial-reply-grant", .serial, .value(placeholder: "LINE"), default: "",
                   help: "a line the controller sends back to grant the last code (plays the good-read pattern), e.g. OK; C escapes; empty: replies are not read",
                   apply: { s, v in s.serial.replyGrant = try OptionTable.replyLine(v) },
                   show: { CEscapedText.render($0.serial.replyGrant) }),
        OptionSpec("serial-reply-deny", .serial, .value(placeholder: "LINE"), default: "",
                   help: "a line the controller sends back to deny the last code (plays the error pattern), e.g. NO; C escapes",
                   apply: { s, v in s.serial.replyDeny = try OptionTable.replyLine(v) },
                   show: { CEscapedText.render($0.serial.replyDeny) }),
        OptionSpec("serial-reply-timeout-ms", .serial, .value(placeholder: "MS"), default: "3000",
                   help: "a reply counts only while the last code sent is at most this old; later replies are logged and ignored",
                   apply: { s, v in s.serial.replyTimeoutMs = try ParseValue.int(v, in: 50...60_000) },
                   show: { String($0.serial.replyTimeoutMs) }),
    ]

    /// A reply line: C escapes, at most 64 bytes, no CR or LF (they end the line).
    static func replyLine(_ text: String) throws -> [UInt8] {
        let bytes = try CEscapedText.parse(text)
        guard bytes.count <= 64 else { throw OptionValueError("'\(text)' is \(bytes.count) bytes; at most 64 are allowed") }
        guard !bytes.contains(0x0A), !bytes.contains(0x0D) else {
            throw OptionValueError("'\(text)' contains CR or LF, which end a reply line; give the line without them")
        }
        return bytes
    }

    /// Prefix/suffix text with C escapes, at most 16 bytes.
    static func delimiter(_ text: String) throws -> [UInt8] {
        let bytes = try CEscapedText.parse(text)
        guard bytes.count <= 16 else { throw OptionValueError("'\(text)' is \(bytes.count) bytes; at most 16 are allowed") }
        return bytes
    }
}

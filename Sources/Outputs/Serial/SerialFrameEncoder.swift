import Platform
import Core
import Settings

/// Turns one decoded code into the exact bytes of one frame (pure; see `SerialFraming` for the layout).
public struct SerialFrameEncoder: Sendable {
    public let framing: SerialFraming
    public let prefix: [UInt8]
    public let suffix: [UInt8]
    public let checksum: SerialChecksum
    public let payloadEncoding: SerialPayloadEncoding
    public let symbologyPrefix: Bool
    private let sanitizer: PayloadSanitizer

    public init(settings: SerialSettings) {
        framing = settings.framing
        prefix = settings.prefix
        suffix = settings.effectiveSuffix
        checksum = settings.framing == .stxEtx ? settings.checksum : .none
        payloadEncoding = settings.payloadEncoding
        symbologyPrefix = settings.symbologyPrefix
        sanitizer = PayloadSanitizer(policy: settings.unsafeBytes, delimiterBytes: settings.prefix + suffix,
                                     byteLimit: settings.format.byteLimit)
    }

    /// The tag put before the payload with `--serial-symbology-prefix`: "QR:", "EAN13:", "DATABAR-EXP:".
    public static func tag(for symbology: Symbology) -> [UInt8] {
        Array((symbology.rawValue.uppercased() + ":").utf8)
    }

    /// The frame for `symbol`, or why it cannot be sent (unsafe bytes under `reject`, an empty payload).
    public func frame(for symbol: DecodedSymbol) throws(SerialPayloadRejection) -> [UInt8] {
        guard !symbol.data.isEmpty else { throw SerialPayloadRejection("empty payload") }
        var body = symbologyPrefix ? SerialFrameEncoder.tag(for: symbol.symbology) : []
        switch payloadEncoding {
        case .hex:
            body += Hex.encode(symbol.data)
        case .text:
            let safe = try sanitizer.apply(symbol.data)
            guard !safe.isEmpty else { throw SerialPayloadRejection("nothing left after stripping unsafe bytes") }
            body += safe
        }
        switch framing {
        case .plain:
            return prefix + body + suffix
        case .stxEtx:
            let covered = body + [ControlByte.etx]
            return prefix + [ControlByte.stx] + covered + checksum.field(for: covered) + suffix
        }
    }

    /// Bytes the encoder itself writes into a frame body or check field: these must not be part of
    /// the prefix or suffix, or a receiver could take them for a frame boundary.
    var generatedBytes: [(bytes: [UInt8], source: String)] {
        var out: [([UInt8], String)] = []
        if payloadEncoding == .hex { out.append((Hex.upperDigits, "the hex payload (--serial-payload hex)")) }
        if payloadEncoding == .text && sanitizer.policy == .escape {
            out.append((Array("\\x".utf8) + Hex.upperDigits, "the escapes (--serial-unsafe escape)"))
        }
        if checksum != .none { out.append((Hex.upperDigits, "the checksum digits (--serial-checksum)")) }
        if symbologyPrefix {
            out.append((Symbology.allCases.flatMap(SerialFrameEncoder.tag(for:)),
                        "the symbology tags (--serial-symbology-prefix)"))
        }
        return out
    }
}

extension SerialFrameEncoder {
    /// No byte this encoder generates (hex digits, escapes, checksum digits, symbology tags) may exceed the
    /// line's data bits or be a prefix or suffix byte, so that a payload can never fake a frame boundary.
    func checkGeneratedBytes(_ settings: SerialSettings) throws(UsageError) {
        let delimiters = Set(settings.prefix + settings.effectiveSuffix)
        for (generated, source) in generatedBytes {
            if let b = generated.first(where: { Int($0) >= settings.format.byteLimit }) {
                throw UsageError("--serial-format \(settings.format): '\(CEscapedText.render([b]))' from \(source) does not fit \(settings.format.dataBits) data bits")
            }
            if let b = generated.first(where: { delimiters.contains($0) }) {
                let name = settings.prefix.contains(b) ? "--serial-prefix" : "--serial-suffix"
                throw UsageError("\(name): '\(CEscapedText.render([b]))' also appears in \(source), so a payload could fake a frame boundary; use control bytes such as \\r\\n")
            }
        }
    }
}
/// The control bytes STX/ETX framing writes.
enum ControlByte {
    static let stx: UInt8 = 0x02
    static let etx: UInt8 = 0x03
}

/// The text of a QR payload as UTF-8, following the QR specification's defaults for byte-mode data
/// without an ECI: bytes that are valid UTF-8 are kept as they are (most encoders today write UTF-8);
/// otherwise Shift_JIS (Japanese phones, the other encoding widely used in byte mode), when every
/// byte sequence is valid Shift_JIS; otherwise ISO-8859-1 (the specification's default), which
/// maps every byte.
///
/// zbar in binary mode returns the raw bytes of all segments and drops ECI designators, so the
/// charset is inferred from the bytes. Used when `DecoderSettings.qrTextAsUTF8` is on (decode-image by
/// default; `run` only with --qr-text-utf8, because the daemon promises payload bytes kept exactly).
public final class QRText {
    private let shiftJIS: CharsetConverter?

    init() {
        // CP932 is Shift_JIS as phones and Windows write it (0x5C is '\\', not YEN SIGN as in glibc's
        // strict SHIFT_JIS, so URLs survive). Without either, Shift_JIS payloads fall back to ISO-8859-1.
        shiftJIS = (try? CharsetConverter(from: "CP932")) ?? (try? CharsetConverter(from: "SHIFT_JIS"))
    }

    /// The payload as UTF-8 text (unchanged when it already is valid UTF-8).
    func utf8(_ bytes: [UInt8]) -> [UInt8] {
        if QRText.isValidUTF8(bytes) { return bytes }
        if let converted = shiftJIS?.convert(bytes) { return converted }
        return QRText.latin1ToUTF8(bytes)
    }

    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    public static func latin1ToUTF8(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            if b < 0x80 {
                out.append(b)
            } else {
                out.append(0xC0 | (b >> 6))
                out.append(0x80 | (b & 0x3F))
            }
        }
        return out
    }
}

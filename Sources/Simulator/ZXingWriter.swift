import CZXingShim
import Core

/// zxing-cpp's writer (MultiFormatWriter, through `zxshim_write`): the simulator's and make-code's
/// encoder for DataMatrix, Aztec, PDF417, Code 93, ITF and Codabar, which libqrencode and ScanGate's own
/// encoders do not draw. Each payload byte is one character (ISO-8859-1), so binary payloads survive.
public enum ZXingWriter {
    /// The symbologies drawn here.
    static let drawn: Set<Symbology> = [.datamatrix, .aztec, .pdf417, .code93, .i25, .codabar]

    public static func encode(_ symbology: Symbology, payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        guard let format = format(symbology) else {
            throw SymbolError("zxing's writer does not draw \(symbology.zxingName)")
        }
        guard !payload.isEmpty else { throw SymbolError("\(symbology.zxingName) payload is empty") }
        var modules = zxshim_modules(width: 0, height: 0, dark: nil)
        var message = [CChar](repeating: 0, count: 256)
        let status = payload.withUnsafeBufferPointer { bytes in
            message.withUnsafeMutableBufferPointer { text in
                zxshim_write(format, bytes.baseAddress, bytes.count, -1, &modules, text.baseAddress, text.count)
            }
        }
        defer { zxshim_free_modules(&modules) }
        guard status == 0 else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw SymbolError("zxing cannot encode this \(symbology.zxingName) payload of \(payload.count) bytes: \(Logger.escape(reason))")
        }
        let width = Int(modules.width), height = Int(modules.height)
        guard width > 0, height > 0, let dark = modules.dark else {
            throw SymbolError("zxing wrote an empty \(symbology.zxingName) symbol")
        }
        let cells = UnsafeBufferPointer(start: dark, count: width * height).map { $0 != 0 }
        // Linear codes come back one row high: as bars.
        return ModuleBitmap(width: width, height: height, dark: cells)
    }

    /// The ZXing::BarcodeFormat bit, by zxing-cpp's own name, for the symbologies drawn here.
    static func format(_ s: Symbology) -> UInt32? {
        guard drawn.contains(s) else { return nil }
        let bit = zxshim_format(s.zxingName)
        return bit == 0 ? nil : bit
    }
}

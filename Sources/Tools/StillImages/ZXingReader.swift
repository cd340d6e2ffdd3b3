import CZXingShim

/// zxing-cpp (Debian's 1.4, through CZXingShim) reading any of its formats, each read named as the library
/// names it (`QRCode`, `MicroQRCode`, `DataMatrix`, `Aztec`, `PDF417`, `EAN13`...) with its payload bytes
/// raw. The live-path bench scores it on formats the decoder seam's `Symbology` does not name yet;
/// `ZXingDecoder` is the seam's implementation for decode-image.
public struct ZXingReader: Sendable {
    public struct Read: Sendable, Equatable {
        public let format: String
        public let bytes: [UInt8]
    }

    /// ZXing::BarcodeFormat bits and names (zxing-cpp 1.4's BarcodeFormat.h).
    public static let formats: [(name: String, bit: UInt32)] = [
        ("Aztec", 1 << 0), ("Codabar", 1 << 1), ("Code39", 1 << 2), ("Code93", 1 << 3), ("Code128", 1 << 4),
        ("DataBar", 1 << 5), ("DataBarExpanded", 1 << 6), ("DataMatrix", 1 << 7), ("EAN8", 1 << 8),
        ("EAN13", 1 << 9), ("ITF", 1 << 10), ("MaxiCode", 1 << 11), ("PDF417", 1 << 12), ("QRCode", 1 << 13),
        ("UPCA", 1 << 14), ("UPCE", 1 << 15), ("MicroQRCode", 1 << 16),
    ]

    private let formatBits: UInt32
    private let flags: UInt32

    /// `formats`: names from `formats` (nil: every one). `tryHarder`: zxing's slower, more thorough
    /// search. Neither rotation nor downscaling is tried: a camera frame is read as it comes.
    public init(formats names: [String]? = nil, tryHarder: Bool = false) {
        let wanted = names.map(Set.init)
        formatBits = ZXingReader.formats.filter { wanted?.contains($0.name) ?? true }.reduce(0) { $0 | $1.bit }
        flags = UInt32(ZXSHIM_RAW_BYTES) | (tryHarder ? UInt32(ZXSHIM_TRY_HARDER) : 0)
    }

    /// Every code found in an 8-bit gray image (stride == width); none when the image is short or zxing failed.
    public func read(width: Int, height: Int, luma: [UInt8]) -> [Read] {
        guard width > 0, height > 0, luma.count >= width * height, formatBits != 0 else { return [] }
        var raw: UnsafeMutablePointer<zxshim_symbol>?
        let count = luma.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return zxshim_read(base, Int32(width), Int32(height), formatBits, flags, &raw)
        }
        guard count > 0, let raw else { return [] }
        defer { zxshim_free(raw, count) }
        var found: [Read] = []
        for i in 0..<Int(count) {
            let s = raw[i]
            let name = ZXingReader.formats.first { $0.bit == s.format }?.name ?? "format-\(s.format)"
            var bytes: [UInt8] = []
            if s.length > 0, let data = s.data { bytes = Array(UnsafeBufferPointer(start: data, count: s.length)) }
            found.append(Read(format: name, bytes: bytes))
        }
        return found
    }
}

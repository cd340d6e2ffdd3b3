/// The code types ScanGate reads. The config and the JSON line's `format` use zxing-cpp's names
/// (`QRCode`, `DataMatrix`, `EAN13`: `zxingName`); the older lower-case names (`qr`, `ean13`: the raw
/// value, also the serial output's tag) and zbar's (`QR-Code`, `EAN-13`: the JSON line's `symbology`)
/// are accepted too.
public enum Symbology: String, CaseIterable, Sendable, Codable, Hashable {
    case qr, ean13, ean8, upca, upce, code128, code39, code93, i25, codabar, databar, databarExp = "databar-exp",
         isbn10, isbn13,
         microqr, datamatrix, aztec, pdf417

    /// zbar's name, as zbarcam prints it: `QR-Code`, `EAN-13`, …; for the codes zbar does not read,
    /// zxing-cpp's. The JSON line's `symbology` and the text output's prefix.
    public var zbarName: String {
        switch self {
        case .qr: return "QR-Code"
        case .ean13: return "EAN-13"
        case .ean8: return "EAN-8"
        case .upca: return "UPC-A"
        case .upce: return "UPC-E"
        case .code128: return "CODE-128"
        case .code39: return "CODE-39"
        case .code93: return "CODE-93"
        case .i25: return "I2/5"
        case .codabar: return "Codabar"
        case .databar: return "DataBar"
        case .databarExp: return "DataBar-Exp"
        case .isbn10: return "ISBN-10"
        case .isbn13: return "ISBN-13"
        case .microqr, .datamatrix, .aztec, .pdf417: return zxingName
        }
    }

    /// zxing-cpp's name (its `ToString(BarcodeFormat)`): the config's and the JSON line's `format`.
    /// zxing has no ISBN format (an ISBN is an EAN-13): those two keep ScanGate's names.
    public var zxingName: String {
        switch self {
        case .qr: return "QRCode"
        case .microqr: return "MicroQRCode"
        case .datamatrix: return "DataMatrix"
        case .aztec: return "Aztec"
        case .pdf417: return "PDF417"
        case .ean13: return "EAN13"
        case .ean8: return "EAN8"
        case .upca: return "UPCA"
        case .upce: return "UPCE"
        case .code128: return "Code128"
        case .code39: return "Code39"
        case .code93: return "Code93"
        case .i25: return "ITF"
        case .codabar: return "Codabar"
        case .databar: return "DataBar"
        case .databarExp: return "DataBarExpanded"
        case .isbn10: return "ISBN10"
        case .isbn13: return "ISBN13"
        }
    }

    /// Matrix and stacked codes: their own error correction, so one sighting is enough (debouncing).
    public var is2D: Bool {
        switch self {
        case .qr, .microqr, .datamatrix, .aztec, .pdf417: return true
        default: return false
        }
    }

    /// The codes only zxing-cpp reads (zbar 0.23 has no decoder for them).
    public var needsZXing: Bool { [.microqr, .datamatrix, .aztec, .pdf417].contains(self) }

    /// Parses a name, case-insensitively: zxing's ("QRCode", "DataMatrix", "EAN13"; '-' and '_'
    /// optional, as zxing parses them), the older lower-case one ("qr", "ean13") or zbar's ("QR-Code",
    /// "EAN-13").
    public init?(name: String) {
        let lower = name.lowercased()
        if let s = Symbology(rawValue: lower) { self = s; return }
        if let s = Symbology.allCases.first(where: { $0.zbarName.lowercased() == lower }) { self = s; return }
        let bare = String(lower.filter { $0 != "-" && $0 != "_" && $0 != " " })
        if let s = Symbology.allCases.first(where: { $0.zxingName.lowercased() == bare }) { self = s; return }
        switch bare {
        case "qrcode", "qr": self = .qr
        case "interleaved2of5", "itf", "i25": self = .i25
        case "microqr": self = .microqr
        case "pdf": self = .pdf417
        default: return nil
        }
    }

    /// Every name the config lists as allowed: zxing's.
    public static var cliNames: String { allCases.map(\.zxingName).joined(separator: ",") }

    /// The set a `symbologies` value names: a comma-separated list of names, or `all`. The error names
    /// the first name that is not a symbology.
    public static func set(named names: [String]) -> Result<Set<Symbology>, NameError> {
        var set = Set<Symbology>()
        for name in names {
            if name.lowercased() == "all" { set.formUnion(allCases); continue }
            guard let s = Symbology(name: name) else { return .failure(NameError(name: name)) }
            set.insert(s)
        }
        return .success(set)
    }

    public struct NameError: Error, Sendable { public let name: String }
}

/// One code found in one frame.
public struct DecodedSymbol: Equatable, Sendable {
    public var symbology: Symbology
    /// The payload bytes exactly as encoded (binary QR preserved).
    public var data: [UInt8]
    /// The axis-aligned box around `corners`.
    public var bounds: Rect
    /// The code's four corners as the decoder located it (zxing: top-left, top-right, bottom-right,
    /// bottom-left as the code reads); zbar gives a box, so its corners are the box's.
    public var corners: [Point]
    /// What the payload says of itself (zxing-cpp only; zbar reports none of it).
    public var content: SymbolContent

    public init(symbology: Symbology, data: [UInt8], bounds: Rect) {
        self.symbology = symbology
        self.data = data
        self.bounds = bounds
        corners = bounds.corners
        content = SymbolContent()
    }

    /// A symbol located by its four corners; `bounds` is their box.
    public init(symbology: Symbology, data: [UInt8], corners: [Point], content: SymbolContent) {
        self.symbology = symbology
        self.data = data
        self.corners = corners
        bounds = Rect(enclosing: corners)
        self.content = content
    }

    /// Identity for debouncing: symbology + payload bytes.
    public var key: CodeKey { CodeKey(symbology: symbology, data: data) }
}

public struct CodeKey: Hashable, Sendable {
    public let symbology: Symbology
    public let data: [UInt8]
    public init(symbology: Symbology, data: [UInt8]) { self.symbology = symbology; self.data = data }
}

/// What a decoder learned about a payload besides its bytes.
public struct SymbolContent: Equatable, Sendable {
    /// The payload is GS1 element strings (FNC1 in first position: GS1 DataMatrix, GS1 QR, GS1-128).
    public var gs1: Bool
    /// The first ECI designator (3 = ISO-8859-1, 26 = UTF-8, 899 = binary), when the code has one.
    public var eci: Int?

    public init(gs1: Bool = false, eci: Int? = nil) {
        self.gs1 = gs1
        self.eci = eci
    }

    /// The character set the ECI names (AIM ECI register), when it names one.
    public var charset: String? {
        guard let eci else { return nil }
        switch eci {
        case 0, 2: return "CP437"
        case 1, 3: return "ISO-8859-1"
        case 4...13: return "ISO-8859-\(eci - 2)"
        case 15...18: return "ISO-8859-\(eci - 2)"
        case 20: return "Shift_JIS"
        case 21: return "windows-1250"
        case 22: return "windows-1251"
        case 23: return "windows-1252"
        case 24: return "windows-1256"
        case 25: return "UTF-16BE"
        case 26: return "UTF-8"
        case 27, 170: return "US-ASCII"
        case 28: return "Big5"
        case 29: return "GB2312"
        case 30: return "EUC-KR"
        case 31: return "GBK"
        case 32: return "GB18030"
        case 33: return "UTF-16LE"
        case 34: return "UTF-32BE"
        case 35: return "UTF-32LE"
        case 899: return "binary"
        default: return nil
        }
    }
}

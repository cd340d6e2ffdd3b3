/// The code types ScanGate reads. CLI names are lower case; output names are zbar's.
public enum Symbology: String, CaseIterable, Sendable, Codable, Hashable {
    case qr, ean13, ean8, upca, upce, code128, code39, code93, i25, codabar, databar, databarExp = "databar-exp",
         isbn10, isbn13

    /// zbar's name, as zbarcam prints it: `QR-Code`, `EAN-13`, …
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
        }
    }

    public var is2D: Bool { self == .qr }

    /// Parses a CLI name ("qr", "ean13") or a zbar name ("QR-Code", "EAN-13").
    public init?(name: String) {
        if let s = Symbology(rawValue: name.lowercased()) { self = s; return }
        if let s = Symbology.allCases.first(where: { $0.zbarName.lowercased() == name.lowercased() }) {
            self = s; return
        }
        switch name.lowercased() {
        case "qrcode", "qr-code": self = .qr
        case "interleaved2of5", "itf": self = .i25
        default: return nil
        }
    }

    public static var cliNames: String { allCases.map(\.rawValue).joined(separator: ",") }
}

/// One code found in one frame.
public struct DecodedSymbol: Equatable, Sendable {
    public var symbology: Symbology
    /// The payload bytes exactly as encoded (binary QR preserved).
    public var data: [UInt8]
    public var bounds: Rect

    public init(symbology: Symbology, data: [UInt8], bounds: Rect) {
        self.symbology = symbology
        self.data = data
        self.bounds = bounds
    }

    /// Identity for debouncing: symbology + payload bytes.
    public var key: CodeKey { CodeKey(symbology: symbology, data: data) }
}

public struct CodeKey: Hashable, Sendable {
    public let symbology: Symbology
    public let data: [UInt8]
    public init(symbology: Symbology, data: [UInt8]) { self.symbology = symbology; self.data = data }
}

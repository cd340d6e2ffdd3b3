import Core
import Images
import XCTest

/// Codes drawn by Debian's `zint` (an encoder independent of zxing-cpp and libqrencode), for the tests
/// that read DataMatrix, Aztec, PDF417, Micro QR and the 1D codes as a camera would show them.
enum ZintCodes {
    static let executable = "/usr/bin/zint"

    /// zint's symbology numbers (`zint -t`).
    static func barcode(_ s: Symbology) -> Int {
        switch s {
        case .qr: return 58
        case .microqr: return 97
        case .datamatrix: return 71
        case .aztec: return 92
        case .pdf417: return 55
        case .ean13, .isbn13, .isbn10: return 13
        case .ean8: return 13
        case .upca: return 34
        case .upce: return 37
        case .code128: return 20
        case .code39: return 8
        case .code93: return 25
        case .i25: return 3
        case .codabar: return 18
        case .databar: return 29
        case .databarExp: return 31
        }
    }

    /// The code as zint draws it (2 x `scale` pixels per module, its own quiet zone: none for the 2D
    /// codes), as luma.
    /// `options` are zint's own (`--binary --esc`, `--eci=26`, `--gs1`).
    static func render(_ symbology: Symbology, _ data: String, scale: Int = 2, options: [String] = [],
                       file: StaticString = #filePath, line: UInt = #line) throws -> LumaImage {
        let dir = try TestFiles.temporaryDirectory()
        let png = dir + "/zint.png"
        let r = try TestProcess.run(executable, ["-b", String(barcode(symbology)), "--scale=\(scale)", "--notext",
                                                 "-o", png] + options + ["-d", data], file: file, line: line)
        guard r.status == 0 else {
            XCTFail("zint \(symbology) \(data): \(r.stderr)", file: file, line: line)
            throw UsageError("zint failed")
        }
        return try ImageFile.read(path: png)
    }

    /// Where `frame` puts `code` when told no place: the centre (zxing-cpp 1.4 finds DataMatrix and
    /// Aztec codes near the centre only; issue 20 has the figures).
    static func centre(_ code: LumaImage, width: Int = 640, height: Int = 480) -> (x: Int, y: Int) {
        (max(0, (width - code.width) / 2), max(0, (height - code.height) / 2))
    }

    /// `code` placed with its top-left corner at `at` (nil: centred) on a `width` x `height` frame of
    /// grey `background`; light-on-dark when `inverted`.
    static func frame(_ code: LumaImage, width: Int = 640, height: Int = 480, at: (x: Int, y: Int)? = nil,
                      background: UInt8 = 200, inverted: Bool = false) -> LumaImage {
        let (x, y) = at ?? centre(code, width: width, height: height)
        var pixels = [UInt8](repeating: inverted ? 255 &- background : background, count: width * height)
        for cy in 0..<code.height where y + cy < height {
            for cx in 0..<code.width where x + cx < width {
                let v = code.pixels[cy * code.width + cx]
                pixels[(y + cy) * width + x + cx] = inverted ? 255 &- v : v
            }
        }
        return LumaImage(width: width, height: height, pixels: pixels)
    }
}

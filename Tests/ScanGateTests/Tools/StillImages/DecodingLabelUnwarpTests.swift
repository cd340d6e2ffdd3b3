import XCTest
import Core
@testable import Decoding
@testable import StillImages

/// The flattened-label pass: a QR printed on a light sticker, on a darker wavy surface.
extension DecodingTests {
    /// A QR sticker (`scale` px per module, 4-module quiet zone) on a dark background, bent by a wave
    /// across and a wave down, as cloth bends a printed label. Returns the image, the sticker's side
    /// and its margin to the image's edge (before bending).
    func wavySticker(_ text: String, scale: Int, amplitude: Double, background: UInt8 = 30) throws
        -> (width: Int, height: Int, luma: [UInt8], side: Int, margin: Int) {
        let (size, label) = try renderQR(text, scale: scale)
        let margin = size / 3
        let width = size + 2 * margin, height = size + 2 * margin
        var luma = [UInt8](repeating: background, count: width * height)
        let wavelength = Double(size) * 0.8
        // A point (sx, sy) of the flat sticker lands at (sx + a·sin(2π·sy/L), sy + a·sin(2π·sx/L)) plus
        // the margin; each image pixel is traced back to the sticker by fixed-point iteration.
        let k = 2 * Double.pi / wavelength
        for y in 0..<height {
            for x in 0..<width {
                let px = Double(x - margin), py = Double(y - margin)
                var sx = px, sy = py
                for _ in 0..<20 { (sx, sy) = (px - amplitude * sin(k * sy), py - amplitude * sin(k * sx)) }
                let ix = Int(sx.rounded()), iy = Int(sy.rounded())
                if ix >= 0, iy >= 0, ix < size, iy < size { luma[y * width + x] = label[iy * size + ix] }
            }
        }
        return (width, height, luma, size, margin)
    }

    func testWavyStickerIsReadOnlyOnceFlattened() throws {
        let (w, h, luma, _, _) = try wavySticker("https://example.org/ticket/12345", scale: 6, amplitude: 9)
        let decoder = try ImageDecoder(settings: imageDecoderDefaults())
        let image = GrayImage(width: w, height: h, pixels: luma)
        // As it is, the bent grid defeats zbar and zxing-cpp alike...
        XCTAssertEqual(decoder.run(ImagePass(.zbar, .none), on: image).count, 0)
        XCTAssertEqual(decoder.run(ImagePass(.zxing, .none), on: image).count, 0)
        // ...and the full decoder reads it through the flattened label.
        let symbols = decoder.decode(width: w, height: h, luma: luma)
        XCTAssertEqual(symbols.map(\.data), [Array("https://example.org/ticket/12345".utf8)])
        XCTAssertEqual(decoder.lastPass, "zbar-qr+label-unwarp")
        // Its bounds are in the photo's pixels: inside the image, around the code on the sticker.
        let b = try XCTUnwrap(symbols.first?.bounds)
        XCTAssertGreaterThanOrEqual(b.x, 0)
        XCTAssertGreaterThanOrEqual(b.y, 0)
        XCTAssertLessThanOrEqual(b.x + b.w, w)
        XCTAssertLessThanOrEqual(b.y + b.h, h)
        XCTAssertGreaterThan(b.w, w / 3)
        XCTAssertGreaterThan(b.h, h / 3)
    }

    func testLargePhotoIsOutlinedOnADownscaledCopyAndStillRead() throws {
        // 24 px per module: a ~1500 px photo, above the 1200 px search size.
        let (w, h, luma, side, border) = try wavySticker("https://example.org/big", scale: 24, amplitude: 30)
        XCTAssertGreaterThan(max(w, h), LabelUnwarp.searchSide)
        let image = GrayImage(width: w, height: h, pixels: luma)
        let patch = try XCTUnwrap(LabelUnwarp.outline(image, scale: 1))
        // The outline found on the half-size copy lies on the full-size sticker's edge, corners
        // included: within a few pixels of where the bend put them.
        let k = 2 * Double.pi / (Double(side) * 0.8)
        func bent(_ sx: Double, _ sy: Double) -> PlanePoint {
            PlanePoint(x: Double(border) + sx + 30 * sin(k * sy), y: Double(border) + sy + 30 * sin(k * sx))
        }
        let last = Double(side - 1)
        for (found, want) in [(patch.top[0], bent(0, 0)), (patch.bottom[patch.width - 1], bent(last, last))] {
            XCTAssertEqual(found.x, want.x, accuracy: 4)
            XCTAssertEqual(found.y, want.y, accuracy: 4)
        }
        let decoder = try ImageDecoder(settings: imageDecoderDefaults())
        XCTAssertEqual(decoder.run(ImagePass(.zbarQR, .labelUnwarp), on: image).map(\.data),
                       [Array("https://example.org/big".utf8)])
    }

    func testFlatteningFindsTheStickerOutline() throws {
        let (w, h, luma, side, border) = try wavySticker("outline", scale: 4, amplitude: 0)
        let patch = try XCTUnwrap(LabelUnwarp.findLabel(GrayImage(width: w, height: h, pixels: luma), scale: 1))
        // Unbent, the sticker is the square between the margins, and the patch maps onto it.
        let margin = Double(border), size = Double(side)
        XCTAssertEqual(Double(patch.width), size, accuracy: 3)
        XCTAssertEqual(Double(patch.height), size, accuracy: 3)
        let topLeft = patch.point(x: 0, y: 0), bottomRight = patch.point(x: Double(patch.width - 1), y: Double(patch.height - 1))
        let middle = patch.point(x: Double(patch.width / 2), y: Double(patch.height / 2))
        XCTAssertEqual(topLeft.x, margin, accuracy: 1.5)
        XCTAssertEqual(topLeft.y, margin, accuracy: 1.5)
        XCTAssertEqual(bottomRight.x, margin + size - 1, accuracy: 1.5)
        XCTAssertEqual(bottomRight.y, margin + size - 1, accuracy: 1.5)
        XCTAssertEqual(middle.x, Double(w) / 2, accuracy: 1.5)
        XCTAssertEqual(middle.y, Double(h) / 2, accuracy: 1.5)
    }

    func testNoLabelNoFlattenedPass() throws {
        // A code on white paper filling the photo: the light region touches the edges; no label.
        let (size, luma) = try renderQR("paper", scale: 4)
        XCTAssertNil(LabelUnwarp.apply(GrayImage(width: size, height: size, pixels: luma)))
        // A flat dark image has no light region at all.
        XCTAssertNil(LabelUnwarp.apply(GrayImage(width: 64, height: 64, pixels: [UInt8](repeating: 20, count: 64 * 64))))
        // Nor does a light speck of less than 5% of the image count as a label.
        var speck = [UInt8](repeating: 20, count: 100 * 100)
        for y in 40..<50 { for x in 40..<50 { speck[y * 100 + x] = 240 } }
        XCTAssertNil(LabelUnwarp.apply(GrayImage(width: 100, height: 100, pixels: speck)))
    }

    func testLabelPassIsSkippedWhenQRIsNotWanted() throws {
        let (w, h, luma, _, _) = try wavySticker("1D only", scale: 6, amplitude: 9)
        var settings = imageDecoderDefaults()
        settings.symbologies = [.ean13, .code128]
        let decoder = try ImageDecoder(settings: settings)
        XCTAssertEqual(decoder.decode(width: w, height: h, luma: luma).count, 0)
        XCTAssertNil(decoder.lastPass)
    }
}

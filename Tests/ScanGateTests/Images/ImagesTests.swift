import CPNG
import CTurboJPEG
import Core
@testable import Images
import XCTest

/// A test image with every gray level and some structure.
func imagesTestPattern(width: Int = 37, height: Int = 23) -> LumaImage {
    LumaImage(width: width, height: height, pixels: (0..<(width * height)).map { UInt8(($0 * 7 + $0 / width * 13) & 0xFF) })
}

final class ImagesTests: XCTestCase {
    func testPGMWriteThenReadGivesTheSamePixels() throws {
        let dir = try TestFiles.temporaryDirectory()
        let image = imagesTestPattern()
        try ImageFile.write(image, to: dir + "/a.pgm", format: .pgm)
        XCTAssertEqual(try ImageFile.read(path: dir + "/a.pgm"), image)
    }

    func testPGMAsciiWithCommentsAndOtherMaxvalsIsScaledTo8Bits() throws {
        let p2 = Array("P2\n# a comment\n3 2\n# another\n15\n0 15 7\n 8 1 15\n".utf8)
        let image = try ImageFile.decode(p2, name: "a.pgm")
        XCTAssertEqual(image.width, 3)
        XCTAssertEqual(image.height, 2)
        XCTAssertEqual(image.pixels, [0, 255, 119, 136, 17, 255])
    }

    func testPGM16BitIsScaledTo8Bits() throws {
        var bytes = Array("P5 2 1 65535\n".utf8)
        bytes += [0xFF, 0xFF, 0x80, 0x00]
        XCTAssertEqual(try ImageFile.decode(bytes, name: "x.pgm").pixels, [255, 128])
    }

    func testPNGWriteThenReadGivesTheSamePixels() throws {
        let dir = try TestFiles.temporaryDirectory()
        let image = imagesTestPattern()
        try ImageFile.write(image, to: dir + "/a.png", format: .png)
        let bytes = try FileBytes.read(path: dir + "/a.png")
        XCTAssertEqual(ImageFile.sniff(bytes), .png)
        XCTAssertEqual(try ImageFile.read(path: dir + "/a.png"), image)
    }

    func testColourPNGWithAlphaIsReadAsGrayOnWhite() throws {
        // 2x1 RGBA: opaque pure green, fully transparent black.
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = 2
        image.height = 1
        image.format = png_uint_32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let rgba: [UInt8] = [0, 255, 0, 255, 0, 0, 0, 0]
        var size: png_alloc_size_t = 1024
        var out = [UInt8](repeating: 0, count: 1024)
        let ok = out.withUnsafeMutableBytes { dst in
            rgba.withUnsafeBytes { png_image_write_to_memory(&image, dst.baseAddress, &size, 0, $0.baseAddress, 0, nil) }
        }
        XCTAssertNotEqual(ok, 0)
        let gray = try ImageFile.decode(Array(out.prefix(Int(size))), name: "rgba.png")
        XCTAssertEqual(gray.width, 2)
        XCTAssertGreaterThan(gray.pixels[0], 150) // green is bright in luma
        XCTAssertLessThan(gray.pixels[0], 255)
        XCTAssertEqual(gray.pixels[1], 255) // transparent → the white background
    }

    func testJPEGIsDecodedToGray() throws {
        let source = LumaImage(width: 64, height: 32, pixels: (0..<(64 * 32)).map { ($0 % 64) < 32 ? 30 : 220 })
        let jpeg = try XCTUnwrap(compressJPEG(source))
        let dir = try TestFiles.temporaryDirectory()
        try FileBytes.write(jpeg, to: dir + "/a.jpg")
        let image = try ImageFile.read(path: dir + "/a.jpg")
        XCTAssertEqual(image.width, 64)
        XCTAssertEqual(image.height, 32)
        XCTAssertLessThan(abs(Int(image.pixels[5]) - 30), 12)
        XCTAssertLessThan(abs(Int(image.pixels[60]) - 220), 12)
    }

    func testTruncatedAndGarbageFilesGiveErrorsNamingTheFile() throws {
        let dir = try TestFiles.temporaryDirectory()
        let image = imagesTestPattern()
        try ImageFile.write(image, to: dir + "/a.png", format: .png)
        try ImageFile.write(image, to: dir + "/a.pgm", format: .pgm)
        let png = try FileBytes.read(path: dir + "/a.png")
        let pgm = try FileBytes.read(path: dir + "/a.pgm")
        let jpeg = try XCTUnwrap(compressJPEG(LumaImage(width: 64, height: 64, fill: 90)))
        let cases: [(String, [UInt8], String)] = [
            ("cut.png", Array(png.prefix(png.count / 2)), "cut.png"),
            ("header.png", Array(png.prefix(12)), "cut.png"),
            ("cut.pgm", Array(pgm.prefix(pgm.count - 10)), "truncated PGM"),
            ("header.pgm", Array("P5 12".utf8), "bad PGM header"),
            ("cut.jpg", Array(jpeg.prefix(jpeg.count / 2)), "invalid JPEG"),
            ("garbage.png", Array("hello, world".utf8), "not a PNG, JPEG or PGM file"),
            ("empty.pgm", [], "empty"),
        ]
        for (name, bytes, _) in cases {
            try FileBytes.write(bytes, to: dir + "/" + name)
            XCTAssertThrowsError(try ImageFile.read(path: dir + "/" + name), name) { error in
                let message = (error as? UsageError)?.message ?? ""
                XCTAssertTrue(message.contains(dir + "/" + name), message)
                XCTAssertFalse(message.contains("\n"))
            }
        }
        XCTAssertThrowsError(try ImageFile.read(path: dir + "/garbage.png")) { error in
            XCTAssertEqual((error as? UsageError)?.message, "cannot read \(dir)/garbage.png: not a PNG, JPEG or PGM file")
        }
        XCTAssertThrowsError(try ImageFile.read(path: dir + "/missing.png")) { error in
            XCTAssertTrue("\(error)".contains("missing.png: No such file"), "\(error)")
        }
    }

    // MARK: Y4M

    func testY4MMonoRoundTripKeepsEveryFrameAndTheRate() throws {
        let dir = try TestFiles.temporaryDirectory()
        let frames = (0..<3).map { n in (0..<(40 * 30)).map { UInt8(($0 + n * 50) & 0xFF) } }
        let writer = try Y4MWriter(path: dir + "/a.y4m", width: 40, height: 30, fps: 12.5, layout: .mono)
        for f in frames { try writer.write(luma: f) }
        writer.close()
        let reader = try Y4MReader(path: dir + "/a.y4m")
        XCTAssertEqual(reader.header, Y4MHeader(width: 40, height: 30, fps: 12.5, chroma: .mono))
        for f in frames { XCTAssertEqual(try reader.nextLuma(), f) }
        XCTAssertNil(try reader.nextLuma())
        try reader.rewind()
        XCTAssertEqual(try reader.nextLuma(), frames[0])
    }

    func testY4M420RoundTripUsesOnlyTheLuma() throws {
        let dir = try TestFiles.temporaryDirectory()
        // Odd sizes: chroma planes are ceil(w/2) x ceil(h/2).
        let frames = (0..<2).map { n in (0..<(41 * 31)).map { UInt8(($0 * 3 + n) & 0xFF) } }
        let writer = try Y4MWriter(path: dir + "/a.y4m", width: 41, height: 31, fps: 30, layout: .c420jpeg)
        for f in frames { try writer.write(luma: f) }
        writer.close()
        let size = try FileBytes.read(path: dir + "/a.y4m").count
        let header = "YUV4MPEG2 W41 H31 F30:1 Ip A1:1 C420jpeg\n".utf8.count
        XCTAssertEqual(size, header + 2 * (6 + 41 * 31 + 2 * 21 * 16))
        let reader = try Y4MReader(path: dir + "/a.y4m")
        XCTAssertEqual(reader.header.chroma, .c420jpeg)
        XCTAssertEqual(reader.header.fps, 30)
        for f in frames { XCTAssertEqual(try reader.nextLuma(), f) }
        XCTAssertNil(try reader.nextLuma())
    }

    func testY4MFromOtherWritersWithFrameParametersAnd444() throws {
        // What ffmpeg writes: extra header fields, frame parameters, no F is also legal.
        let dir = try TestFiles.temporaryDirectory()
        var bytes = Array("YUV4MPEG2 W4 H2 Ip A0:0 C444 XYSCSS=444\n".utf8)
        for n in 0..<2 {
            bytes += Array("FRAME Ixyz\n".utf8)
            bytes += [UInt8](repeating: UInt8(10 + n), count: 8) + [UInt8](repeating: 128, count: 16)
        }
        try FileBytes.write(bytes, to: dir + "/b.y4m")
        let reader = try Y4MReader(path: dir + "/b.y4m")
        XCTAssertNil(reader.header.fps)
        XCTAssertEqual(try reader.nextLuma(), [UInt8](repeating: 10, count: 8))
        XCTAssertEqual(try reader.nextLuma(), [UInt8](repeating: 11, count: 8))
        XCTAssertNil(try reader.nextLuma())
    }

    func testTruncatedY4MNamesTheFileAndTheFrame() throws {
        let dir = try TestFiles.temporaryDirectory()
        let writer = try Y4MWriter(path: dir + "/a.y4m", width: 16, height: 16, fps: 15, layout: .c420jpeg)
        for _ in 0..<3 { try writer.write(luma: [UInt8](repeating: 50, count: 256)) }
        writer.close()
        let full = try FileBytes.read(path: dir + "/a.y4m")
        for (cut, expected) in [(full.count - 10, "frame 2 is truncated"), (full.count - 400, "frame 1 is truncated (118 of 128 chroma bytes)"),
                                (full.count - 2 * (256 + 128 + 6) + 3, "frame 1 is truncated (in its FRAME header)")] {
            try FileBytes.write(Array(full.prefix(cut)), to: dir + "/cut.y4m")
            let reader = try Y4MReader(path: dir + "/cut.y4m")
            var message = ""
            do {
                while try reader.nextLuma() != nil {}
            } catch {
                message = error.message
            }
            XCTAssertTrue(message.hasPrefix("cannot read \(dir)/cut.y4m: \(expected)"), message)
        }
    }

    func testBadY4MHeadersAreClearErrors() throws {
        let dir = try TestFiles.temporaryDirectory()
        let cases: [(String, String)] = [
            ("YUV4MPEG2 W16 H16 C420p10\n", "colour space 'C420p10' is not supported"),
            ("YUV4MPEG2 H16\n", "needs a positive W and H"),
            ("P5 3 3 255\n", "not a YUV4MPEG2"),
            ("YUV4MPEG2 W16 H16 F15\n", "bad Y4M frame rate"),
        ]
        for (header, expected) in cases {
            try FileBytes.write(Array(header.utf8), to: dir + "/h.y4m")
            XCTAssertThrowsError(try Y4MReader(path: dir + "/h.y4m")) { error in
                let message = (error as? UsageError)?.message ?? ""
                XCTAssertTrue(message.hasPrefix("cannot read \(dir)/h.y4m: ") && message.contains(expected), message)
            }
        }
    }

    func testFrameRatesAreWrittenAsRationals() {
        XCTAssertTrue(Y4MHeader.rational(15) == (15, 1))
        XCTAssertTrue(Y4MHeader.rational(30000.0 / 1001) == (30000, 1001))
        XCTAssertTrue(Y4MHeader.rational(12.5) == (12500, 1000))
    }

    // MARK: helpers

    private func compressJPEG(_ image: LumaImage) -> [UInt8]? {
        guard let handle = tjInitCompress() else { return nil }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let result = image.pixels.withUnsafeBufferPointer { src in
            tjCompress2(handle, src.baseAddress, Int32(image.width), Int32(image.width), Int32(image.height),
                        Int32(TJPF_GRAY.rawValue), &buffer, &size, Int32(TJSAMP_GRAY.rawValue), 95, 0)
        }
        guard result == 0, let buffer else { return nil }
        defer { tjFree(buffer) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }
}

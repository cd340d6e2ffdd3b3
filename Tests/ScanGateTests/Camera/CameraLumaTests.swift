#if canImport(Glibc)
import Glibc
#endif
import CTurboJPEG
import Core
import Platform
import XCTest
@testable import Camera
import Settings

/// The luma of each pixel format, with padded rows, end to end through the fake device; MJPEG through
/// a JPEG encoded here with libturbojpeg.
final class CameraLumaTests: XCTestCase {
    let width = 16, height = 8

    func frame(_ fourcc: FourCC, padding: Int, bytes: [UInt8], pixelFormat: CapturePixelFormat = .auto) throws -> Frame {
        let fake = FakeV4L2Device(formats: [.init(fourcc: fourcc, sizes: [FrameSize(width: width, height: height)],
                                                  padding: padding)])
        var s = CaptureSettings()
        s.width = width
        s.height = height
        s.pixelFormat = pixelFormat
        let cam = V4L2Camera(device: "/dev/video0", settings: s, logger: Logger(level: .error), calls: fake)
        try cam.open()
        defer { cam.close() }
        XCTAssertEqual(cam.format?.fourcc, fourcc)
        let bytesPerPixel = [.yuyv, .uyvy].contains(fourcc) ? 2 : [.rgb3, .bgr3].contains(fourcc) ? 3 : 1
        XCTAssertEqual(cam.format?.bytesPerLine, fourcc == .mjpg ? 0 : width * bytesPerPixel + padding)
        XCTAssertTrue(fake.deliver(bytes))
        return try XCTUnwrap(try cam.nextFrame())
    }

    var luma: [UInt8] { CameraTestImage.pattern(width: width, height: height) }

    func testGreyWithPaddedRows() throws {
        let f = try frame(.grey, padding: 16, bytes: CameraTestImage.grey(luma, width: width, padding: 16))
        XCTAssertEqual(f.luma, luma)
        XCTAssertEqual(f.width, width)
        XCTAssertEqual(f.height, height)
    }

    func testYUYVTakesTheYBytesOfPaddedRows() throws {
        let f = try frame(.yuyv, padding: 8, bytes: CameraTestImage.packed422(luma, width: width, padding: 8, uyvy: false))
        XCTAssertEqual(f.luma, luma)
    }

    func testUYVYTakesTheYBytesOfPaddedRows() throws {
        let f = try frame(.uyvy, padding: 4, bytes: CameraTestImage.packed422(luma, width: width, padding: 4, uyvy: true))
        XCTAssertEqual(f.luma, luma)
    }

    func testNV12TakesTheYPlaneOfPaddedRows() throws {
        let f = try frame(.nv12, padding: 16, bytes: CameraTestImage.nv12(luma, width: width, padding: 16))
        XCTAssertEqual(f.luma, luma)
    }

    func testYU12TakesTheYPlane() throws {
        let f = try frame(.yu12, padding: 0, bytes: CameraTestImage.nv12(luma, width: width, padding: 0))
        XCTAssertEqual(f.luma, luma)
    }

    /// 24-bit RGB with padded rows: each pixel's BT.601 luma (0.299 R + 0.587 G + 0.114 B).
    func rgbBytes(_ pixels: [(UInt8, UInt8, UInt8)], padding: Int, blueFirst: Bool) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = pixels[y * width + x]
                out += blueFirst ? [b, g, r] : [r, g, b]
            }
            out += [UInt8](repeating: 0xEE, count: padding)
        }
        return out
    }

    func testRGB3AndBGR3AreWeightedToLuma() throws {
        // Pure colours, greys and mixes; expected: BT.601 luma in floating point, within 1 of 255.
        let colours: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0),
                                                (128, 128, 128), (200, 100, 50), (10, 20, 30)]
        let pixels = (0..<(width * height)).map { colours[$0 % colours.count] }
        let expected = pixels.map { 0.299 * Double($0.0) + 0.587 * Double($0.1) + 0.114 * Double($0.2) }
        let rgb = try frame(.rgb3, padding: 6, bytes: rgbBytes(pixels, padding: 6, blueFirst: false))
        let bgr = try frame(.bgr3, padding: 0, bytes: rgbBytes(pixels, padding: 0, blueFirst: true))
        for f in [rgb, bgr] {
            XCTAssertEqual(f.luma.count, expected.count)
            for (got, want) in zip(f.luma, expected) { XCTAssertEqual(Double(got), want, accuracy: 1.0) }
        }
        XCTAssertEqual(rgb.luma, bgr.luma)
    }

    func testRGBIsPreferredOverMJPEGButNotOverYUV() throws {
        let size = FrameSize(width: width, height: height)
        var s = CaptureSettings()
        s.width = width
        s.height = height
        for (offered, chosen) in [([FourCC.mjpg, .bgr3], FourCC.bgr3), ([.rgb3, .yuyv, .mjpg], .yuyv)] {
            let fake = FakeV4L2Device(formats: offered.map { .init(fourcc: $0, sizes: [size]) })
            let cam = V4L2Camera(device: "/dev/video0", settings: s, logger: Logger(level: .error), calls: fake)
            try cam.open()
            XCTAssertEqual(cam.format?.fourcc, chosen, "offered \(offered)")
            cam.close()
        }
    }

    func testShortBufferIsRejectedByTheExtractor() {
        let bytes = [UInt8](repeating: 1, count: 10)
        bytes.withUnsafeBytes { raw in
            XCTAssertNil(LumaLayout.packed(step: 2, offset: 0).extract(from: raw, width: 4, height: 2, bytesPerLine: 8))
            XCTAssertNotNil(LumaLayout.packed(step: 1, offset: 0).extract(from: raw, width: 4, height: 2, bytesPerLine: 6))
            // RGB: 3 bytes a pixel; 4x2 needs 12 + 12 (no padding), so 10 bytes are short.
            XCTAssertNil(LumaLayout.rgb(red: 0, blue: 2).extract(from: raw, width: 4, height: 2, bytesPerLine: 12))
            XCTAssertNil(LumaLayout.rgb(red: 0, blue: 2).extract(from: raw, width: 2, height: 2, bytesPerLine: 5))
            XCTAssertNotNil(LumaLayout.rgb(red: 0, blue: 2).extract(from: raw, width: 1, height: 2, bytesPerLine: 3))
            // The smallest frames: one pixel of GREY, of RGB; JPEG is never extracted here.
            XCTAssertEqual(LumaLayout.packed(step: 1, offset: 0).extract(from: raw, width: 1, height: 1, bytesPerLine: 1), [1])
            XCTAssertEqual(LumaLayout.rgb(red: 0, blue: 2).extract(from: raw, width: 1, height: 1, bytesPerLine: 3), [1])
            XCTAssertNil(LumaLayout.jpeg.extract(from: raw, width: 1, height: 1, bytesPerLine: 0))
        }
    }

    func testMJPEGIsDecodedStraightToGray() throws {
        // Flat 8x8 blocks survive JPEG at quality 100 almost exactly.
        let blocks = (0..<(width * height)).map { i in UInt8(((i % width) / 8 * 100 + (i / width) / 8 * 60 + 20) & 0xFF) }
        for (subsampling, pixelFormat) in [(TJSAMP_GRAY, TJPF_GRAY), (TJSAMP_420, TJPF_RGB)] {
            let source = pixelFormat == TJPF_GRAY ? blocks : blocks.flatMap { [$0, $0, $0] }
            let jpeg = try encodeJPEG(source, pixelFormat: pixelFormat, subsampling: subsampling)
            let f = try frame(.mjpg, padding: 0, bytes: jpeg, pixelFormat: .mjpg)
            XCTAssertEqual(f.luma.count, width * height)
            for (got, want) in zip(f.luma, blocks) {
                XCTAssertLessThanOrEqual(abs(Int(got) - Int(want)), 2, "subsampling \(subsampling)")
            }
        }
    }

    func testCorruptMJPEGFrameIsSkippedNotFatal() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .mjpg, sizes: [FrameSize(width: width, height: height)])])
        var s = CaptureSettings()
        s.width = width
        s.height = height
        s.frameTimeoutMs = 200
        let cam = V4L2Camera(device: "/dev/video0", settings: s, logger: Logger(level: .error), calls: fake)
        try cam.open()
        defer { cam.close() }
        let good = try encodeJPEG(luma, pixelFormat: TJPF_GRAY, subsampling: TJSAMP_GRAY)
        fake.deliver([0xFF, 0xD8, 0x00, 0x01, 0x02], sequence: 1)
        var polls = 0
        fake.onPoll = { device in
            polls += 1
            if polls == 2 { device.deliver(good, sequence: 2) }
        }
        XCTAssertEqual(try cam.nextFrame()?.sequence, 2)
        XCTAssertEqual(cam.skippedFrames, 1)
    }

    private func encodeJPEG(_ pixels: [UInt8], pixelFormat: TJPF, subsampling: TJSAMP) throws -> [UInt8] {
        let handle = try XCTUnwrap(tjInitCompress())
        defer { tjDestroy(handle) }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let rc = pixels.withUnsafeBufferPointer { p in
            tjCompress2(handle, p.baseAddress, Int32(width), 0, Int32(height), pixelFormat.rawValue, &output, &size,
                        Int32(subsampling.rawValue), 100, 0)
        }
        XCTAssertEqual(rc, 0, String(cString: tjGetErrorStr2(handle)))
        let buffer = try XCTUnwrap(output)
        defer { tjFree(buffer) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }
}

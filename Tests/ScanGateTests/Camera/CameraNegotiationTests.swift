#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Config
import Core
import Platform
import XCTest
@testable import Camera
import Settings

/// Format negotiation through the fake device: which format is chosen, what a size the device cannot
/// give says, how a missing, busy or unsuitable node is reported.
final class CameraNegotiationTests: XCTestCase {
    let size = FrameSize(width: 64, height: 48)

    func settings(_ configure: (inout CaptureSettings) -> Void = { _ in }) -> CaptureSettings {
        var s = CaptureSettings()
        s.width = 64
        s.height = 48
        s.fps = 15
        configure(&s)
        return s
    }

    func camera(_ fake: FakeV4L2Device, _ s: CaptureSettings? = nil, logs: LogCapture = LogCapture()) -> V4L2Camera {
        V4L2Camera(device: "/dev/video0", settings: s ?? settings(), logger: logs.logger, calls: fake)
    }

    func testAutoPrefersGreyThenPackedYUVThenMJPEG() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .mjpg, sizes: [size]), .init(fourcc: .yuyv, sizes: [size]),
                                            .init(fourcc: .grey, sizes: [size])])
        let cam = camera(fake)
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .grey)
        cam.close()

        fake.formats.removeLast()
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .yuyv)
        cam.close()

        fake.formats = [.init(fourcc: .mjpg, sizes: [size]), .init(fourcc: .nv12, sizes: [size])]
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .nv12)
        cam.close()
    }

    func testAutoSkipsAPreferredFormatThatLacksTheSize() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 32, height: 24)]),
                                            .init(fourcc: .yuyv, sizes: [FrameSize(width: 32, height: 24), size])])
        let cam = camera(fake)
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .yuyv)
        XCTAssertEqual(cam.format?.width, 64)
        cam.close()
    }

    func testAutoPrefersAFormatOfferingTheRequestedRate() throws {
        // Like a UVC camera: YUYV only at a low rate, MJPEG at the rate asked for.
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [size], rates: [5]),
                                            .init(fourcc: .mjpg, sizes: [size], rates: [30, 15])])
        let cam = camera(fake)
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .mjpg)
        XCTAssertEqual(fake.fps, 15, "S_PARM asked for --fps")
        cam.close()
    }

    func testExplicitPixelFormatIsUsedEvenWhenABetterOneExists() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [size]), .init(fourcc: .uyvy, sizes: [size])])
        let cam = camera(fake, settings { $0.pixelFormat = .uyvy })
        try cam.open()
        XCTAssertEqual(cam.format?.fourcc, .uyvy)
        cam.close()
    }

    func testExplicitPixelFormatTheDeviceLacksIsAUsageErrorListingOffers() {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [size], rates: [30])])
        let cam = camera(fake, settings { $0.pixelFormat = .mjpg })
        XCTAssertThrowsError(try cam.open()) { error in
            let message = (error as? UsageError)?.message ?? "not a UsageError: \(error)"
            XCTAssertTrue(message.contains("--pixel-format MJPG"), message)
            XCTAssertTrue(message.contains("YUYV 64x48 (30 fps)"), message)
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty, "the descriptor is closed after a failed open")
    }

    func testSizeTheDeviceCannotGiveFailsListingFormatsSizesAndRates() {
        let fake = FakeV4L2Device(formats: [
            .init(fourcc: .yuyv, sizes: [FrameSize(width: 640, height: 480), FrameSize(width: 1280, height: 720)],
                  rates: [30, 15]),
            .init(fourcc: .mjpg, sizes: [FrameSize(width: 1280, height: 720)], rates: [60]),
        ])
        let cam = camera(fake, settings { $0.width = 1920; $0.height = 1080 })
        XCTAssertThrowsError(try cam.open()) { error in
            let message = (error as? UsageError)?.message ?? "not a UsageError: \(error)"
            XCTAssertTrue(message.contains("cannot give 1920x1080"), message)
            XCTAssertTrue(message.contains("driver gave 640x480"), message)
            XCTAssertTrue(message.contains("YUYV 640x480 (30, 15 fps), 1280x720 (30, 15 fps)"), message)
            XCTAssertTrue(message.contains("MJPG 1280x720 (60 fps)"), message)
            XCTAssertFalse(message.contains("\n"), "one line")
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty)
        XCTAssertEqual(fake.mappedCount, 0)
    }

    func testSizeMismatchFromADriverThatListsNoSizesStillFailsClearly() {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 320, height: 240)])])
        fake.enumeratesSizes = false
        let cam = camera(fake)
        XCTAssertThrowsError(try cam.open()) { error in
            let message = (error as? UsageError)?.message ?? "not a UsageError: \(error)"
            XCTAssertTrue(message.contains("GREY: driver gave 320x240"), message)
            XCTAssertTrue(message.contains("GREY (sizes not listed)"), message)
        }
    }

    func testNoReadableFormatIsAUsageError() {
        // 8-bit Bayer: what a Pi camera module's raw node offers without libcamera.
        let bayer = FourCC("BA81")!
        let fake = FakeV4L2Device(formats: [.init(fourcc: bayer, sizes: [size])])
        XCTAssertThrowsError(try camera(fake).open()) { error in
            let message = (error as? UsageError)?.message ?? "not a UsageError: \(error)"
            XCTAssertTrue(message.contains("offers no format ScanGate reads (it offers BA81"), message)
        }
    }

    func testDifferentRateIsLoggedNotFatal() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [size], rates: [59.94])])
        let logs = LogCapture()
        let cam = camera(fake, logs: logs)
        try cam.open()
        XCTAssertTrue(logs.all.contains { $0.contains("runs at 59.94 fps, not the 15 asked") }, "\(logs.all)")
        cam.close()
    }

    func testFrameInterval() {
        XCTAssertEqual(FormatNegotiation.interval(fps: 15).numerator, 1)
        XCTAssertEqual(FormatNegotiation.interval(fps: 15).denominator, 15)
        XCTAssertEqual(FormatNegotiation.interval(fps: 7.5).numerator, 2)
        XCTAssertEqual(FormatNegotiation.interval(fps: 7.5).denominator, 15)
    }

    func testMissingDeviceIsDeviceLost() {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [size])])
        fake.exists = false
        XCTAssertThrowsError(try camera(fake).open()) { error in
            guard case CaptureError.deviceLost(let device, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertEqual(device, "/dev/video0")
            XCTAssertTrue(reason.contains("ENOENT"), reason)
        }
    }

    func testBusyDeviceIsDeviceLostSoItIsRetried() {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [size])])
        fake.failures[.setFormat] = .busy
        XCTAssertThrowsError(try camera(fake).open()) { error in
            guard case CaptureError.deviceLost(_, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertTrue(reason.contains("VIDIOC_S_FMT /dev/video0") && reason.contains("EBUSY"), reason)
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testNodeThatIsNotACaptureDeviceIsAUsageError() {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [size])])
        fake.capabilities = UInt32(V4L2_CAP_VIDEO_OUTPUT) | UInt32(V4L2_CAP_STREAMING)
        XCTAssertThrowsError(try camera(fake).open()) { error in
            let message = (error as? UsageError)?.message ?? "not a UsageError: \(error)"
            XCTAssertTrue(message.contains("is not a video capture node"), message)
        }
        fake.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE)
        XCTAssertThrowsError(try camera(fake).open()) { error in
            XCTAssertTrue("\(error)".contains("cannot stream"), "\(error)")
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testPixelFormatOption() throws {
        var run = RunSettings()
        let option = try XCTUnwrap(OptionTable.find("pixel-format"))
        XCTAssertEqual(option.defaultText, "auto")
        try option.apply(&run, "yuyv")
        XCTAssertEqual(run.capture.pixelFormat, .yuyv)
        try option.apply(&run, "MJPG")
        XCTAssertEqual(option.show(run), "MJPG")
        try option.apply(&run, "bgr3")
        XCTAssertEqual(run.capture.pixelFormat, .bgr3)
        XCTAssertThrowsError(try option.apply(&run, "BA81")) { error in
            XCTAssertEqual("\(error)", "'BA81' is not one of auto, GREY, YUYV, UYVY, NV12, YU12, RGB3, BGR3, MJPG")
        }
    }
}

/// The real libv4l2 calls, on what this machine has (no camera): a node that is no V4L2 device and a
/// missing one. The real vivid driver is exercised by the hardware-in-the-loop suite.
final class CameraRealCallsTests: XCTestCase {
    func testNonV4L2NodeIsAUsageErrorAndMissingNodeIsDeviceLost() {
        var s = CaptureSettings()
        s.width = 64
        s.height = 48
        let notACamera = V4L2Camera(device: "/dev/null", settings: s, logger: Logger(level: .error))
        XCTAssertThrowsError(try notACamera.open()) { error in
            XCTAssertEqual((error as? UsageError)?.message,
                           "--camera /dev/null is not a V4L2 device (Inappropriate ioctl for device (ENOTTY))")
        }
        let missing = V4L2Camera(device: "/dev/v4l/by-id/scangate-test-missing", settings: s, logger: Logger(level: .error))
        XCTAssertThrowsError(try missing.open()) { error in
            guard case CaptureError.deviceLost(let device, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertEqual(device, "/dev/v4l/by-id/scangate-test-missing")
            XCTAssertEqual(reason, "open /dev/v4l/by-id/scangate-test-missing: No such file or directory (ENOENT)")
        }
        missing.close()
        notACamera.close()
    }
}

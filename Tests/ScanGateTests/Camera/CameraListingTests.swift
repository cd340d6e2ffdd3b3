#if canImport(Glibc)
import Glibc
#endif
import App
import CV4L2
import Core
import Platform
import XCTest
@testable import Camera

/// `scangate list-cameras`: what it says about a device, how it finds nodes and their by-id names.
final class CameraListingTests: XCTestCase {
    func testADeviceWithoutControlsIsListedWithNone() throws {
        // vimc's capture nodes and libcamera's v4l2-compat answer VIDIOC_QUERYCTRL with ENOTTY.
        let fake = FakeV4L2Device(formats: [.init(fourcc: .bgr3, sizes: [FrameSize(width: 640, height: 480)], rates: [30])])
        fake.failures[.queryControl] = Errno(rawValue: ENOTTY)
        let text = try XCTUnwrap(try CameraListing.describe("/dev/video4", links: [], calls: fake, allControls: false))
        XCTAssertTrue(text.contains("BGR3 (Fake BGR3): 640x480 (30 fps)"), text)
        XCTAssertFalse(text.contains("not readable"), text)
    }

    func testLibcameraCompatIsRecognisedInLDPreload() {
        XCTAssertTrue(SystemV4L2.libcameraCompatPreloaded("/usr/lib/x86_64-linux-gnu/v4l2-compat.so"))
        XCTAssertTrue(SystemV4L2.libcameraCompatPreloaded("/opt/x.so /usr/lib/aarch64-linux-gnu/libcamera/v4l2-compat.so"))
        XCTAssertTrue(SystemV4L2.libcameraCompatPreloaded("/a.so:/usr/lib/v4l2-compat.so"))
        XCTAssertFalse(SystemV4L2.libcameraCompatPreloaded(nil))
        XCTAssertFalse(SystemV4L2.libcameraCompatPreloaded(""))
        XCTAssertFalse(SystemV4L2.libcameraCompatPreloaded("/usr/lib/libv4l/v4l2convert.so"))
        XCTAssertFalse(SystemV4L2.libcameraCompatPreloaded("/usr/lib/v4l2-compat.so.bak"))
    }

    func testDescribesFormatsSizesRatesAndScanningControls() throws {
        let fake = FakeV4L2Device(formats: [
            .init(fourcc: .yuyv, sizes: [FrameSize(width: 640, height: 480), FrameSize(width: 1280, height: 720)],
                  rates: [30, 7.5]),
            .init(fourcc: .mjpg, sizes: [FrameSize(width: 1280, height: 720)], rates: [60]),
            .init(fourcc: FourCC("BA81")!, sizes: [FrameSize(width: 640, height: 480)], rates: [30]),
        ])
        fake.controls = [
            .init(id: 0x0098_0900, name: "Brightness", minimum: 0, maximum: 255, defaultValue: 128, value: 140),
            .init(id: 0x0098_0901, name: "Hue", minimum: -180, maximum: 180, defaultValue: 0, value: 0),
            .init(id: 0x009a_0902, name: "Exposure Time, Absolute", minimum: 1, maximum: 5000, defaultValue: 156,
                  value: 156, flags: UInt32(V4L2_CTRL_FLAG_INACTIVE)),
        ]
        let text = try XCTUnwrap(try CameraListing.describe("/dev/video0", links: ["/dev/v4l/by-id/usb-Fake-video-index0"],
                                                            calls: fake, allControls: false))
        XCTAssertEqual(text, """
            /dev/video0: Fake Camera (driver fake, bus platform:fake)
              by-id: /dev/v4l/by-id/usb-Fake-video-index0
              formats:
                YUYV (Fake YUYV): 640x480 (30, 7.5 fps), 1280x720 (30, 7.5 fps)
                MJPG (Fake MJPG, compressed): 1280x720 (60 fps)
                BA81 (Fake BA81, not readable by ScanGate): 640x480 (30 fps)
              controls (scanning-related; --all-controls for every one):
                brightness (int): min 0 max 255 step 1 default 128 current 140
                exposure_time_absolute (int): min 1 max 5000 step 1 default 156 current 156 [inactive]
            """)
        let all = try XCTUnwrap(try CameraListing.describe("/dev/video0", links: [], calls: fake, allControls: true))
        XCTAssertTrue(all.contains("    hue (int): min -180 max 180"), all)
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testOutputNodesAreNotListed() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 64, height: 48)])])
        fake.capabilities = UInt32(V4L2_CAP_VIDEO_OUTPUT) | UInt32(V4L2_CAP_STREAMING)
        XCTAssertNil(try CameraListing.describe("/dev/video1", links: [], calls: fake, allControls: false))
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testFindsVideoNodesInNumericOrderAndTheirByIdLinks() throws {
        let root = try TestFiles.temporaryDirectory()
        for name in ["video10", "video2", "video0", "vbi0", "videoX"] {
            XCTAssertNotEqual(creat(root + "/" + name, 0o600), -1)
        }
        XCTAssertEqual(CameraNodes.videoNodes(in: root), [root + "/video0", root + "/video2", root + "/video10"])
        XCTAssertEqual(mkdir(root + "/by-id", 0o700), 0)
        XCTAssertEqual(symlink("../video2", root + "/by-id/usb-Cam-video-index0"), 0)
        XCTAssertEqual(symlink("../video0", root + "/by-id/usb-Other-video-index0"), 0)
        XCTAssertEqual(CameraNodes.links(to: root + "/video2", in: root + "/by-id"), [root + "/by-id/usb-Cam-video-index0"])
        XCTAssertEqual(CameraNodes.links(to: root + "/video2", in: root + "/missing"), [])
    }

    func testCommandRejectsUnknownOptionsAndExitsZeroWithoutCameras() {
        XCTAssertEqual(ListCamerasCommand.run(["--bogus"]), 2)
        if CameraNodes.videoNodes().isEmpty {
            XCTAssertEqual(ListCamerasCommand.run([]), 0)
        }
    }
}

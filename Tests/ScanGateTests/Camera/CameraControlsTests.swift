#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import XCTest
@testable import Camera
import Settings

/// Controls set by name at open, as v4l2-ctl names them.
final class CameraControlsTests: XCTestCase {
    let size = FrameSize(width: 32, height: 16)

    func device() -> FakeV4L2Device {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [size])])
        fake.controls = [
            .init(id: 0x0098_0900, name: "Brightness", minimum: 0, maximum: 255, defaultValue: 128, value: 128),
            .init(id: 0x0098_0913, name: "Gain", minimum: 0, maximum: 100, defaultValue: 0, value: 0),
            .init(id: 0x009a_0001, name: "Camera Controls", type: V4L2_CTRL_TYPE_CTRL_CLASS, minimum: 0, maximum: 0,
                  defaultValue: 0, value: 0),
            .init(id: 0x009a_0901, name: "Auto Exposure", type: V4L2_CTRL_TYPE_MENU, minimum: 0, maximum: 3,
                  defaultValue: 3, value: 3),
            .init(id: 0x009a_0902, name: "Exposure Time, Absolute", minimum: 1, maximum: 5000, defaultValue: 156,
                  value: 156),
            .init(id: 0x009a_090a, name: "Focus, Absolute", minimum: 0, maximum: 250, defaultValue: 0, value: 0,
                  flags: UInt32(V4L2_CTRL_FLAG_DISABLED)),
        ]
        return fake
    }

    func camera(_ fake: FakeV4L2Device, _ controls: [CameraControl], logs: LogCapture = LogCapture()) -> V4L2Camera {
        var s = CaptureSettings()
        s.width = size.width
        s.height = size.height
        s.controls = controls
        return V4L2Camera(device: "/dev/video0", settings: s, logger: logs.logger, calls: fake)
    }

    func testNamesNormaliseLikeV4L2Ctl() {
        XCTAssertEqual(ControlInfo.normalise("Exposure Time, Absolute"), "exposure_time_absolute")
        XCTAssertEqual(ControlInfo.normalise("White Balance Temperature, Auto"), "white_balance_temperature_auto")
        XCTAssertEqual(ControlInfo.normalise("  Focus (absolute) "), "focus_absolute")
        XCTAssertEqual(ControlInfo.normalise("Power Line Frequency"), "power_line_frequency")
        XCTAssertEqual(ControlInfo.normalise("gain"), "gain")
    }

    func testControlsAreSetByNameInTheOrderGiven() throws {
        let fake = device()
        let logs = LogCapture()
        let cam = camera(fake, [CameraControl(name: "auto_exposure", value: 1),
                                CameraControl(name: "Exposure Time, Absolute", value: 200),
                                CameraControl(name: "GAIN", value: 5)], logs: logs)
        try cam.open()
        XCTAssertEqual(fake.log.filter { $0.hasPrefix("S_CTRL") },
                       ["S_CTRL auto_exposure=1", "S_CTRL exposure_time_absolute=200", "S_CTRL gain=5"])
        XCTAssertEqual(fake.controls.first { $0.name == "Gain" }?.value, 5)
        XCTAssertTrue(logs.all.contains { $0.contains("exposure_time_absolute = 200") }, "\(logs.all)")
        cam.close()
    }

    func testUnknownControlListsTheAvailableOnes() {
        let fake = device()
        XCTAssertThrowsError(try camera(fake, [CameraControl(name: "focus_absolute", value: 10)]).open()) { error in
            XCTAssertEqual((error as? UsageError)?.message,
                           "camera /dev/video0 has no control 'focus_absolute'; it has: brightness, gain, auto_exposure, "
                           + "exposure_time_absolute")
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty)
        XCTAssertEqual(fake.mappedCount, 0)
    }

    func testOutOfRangeValueSaysWhatIsAllowed() {
        let fake = device()
        XCTAssertThrowsError(try camera(fake, [CameraControl(name: "exposure_time_absolute", value: 0)]).open()) { error in
            XCTAssertEqual((error as? UsageError)?.message,
                           "camera /dev/video0: exposure_time_absolute=0 is out of range; allowed 1..5000")
        }
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testListingSkipsClassHeadingsAndDisabledControls() throws {
        let fake = device()
        let dev = try V4L2Device.open("/dev/video0", calls: fake).get()
        defer { _ = dev.close() }
        let controls = try CameraControls(device: dev).list()
        XCTAssertEqual(controls.map(\.key), ["brightness", "gain", "auto_exposure", "exposure_time_absolute"])
        XCTAssertEqual(controls.map(\.mattersForScanning), [true, true, true, true])
        XCTAssertEqual(try CameraControls(device: dev).value(controls[0]).get(), 128)
    }
}

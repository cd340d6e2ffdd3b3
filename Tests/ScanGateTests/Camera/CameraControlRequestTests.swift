#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform
@testable import Camera
@testable import Service
@testable import App
import Settings
@testable import Config
import Catalog
import XCTest

/// The status socket's `controls` and `control NAME=VALUE` requests: against the scripted V4L2 device
/// (the camera's panel), a simulated source (an error), and through a real socket with `scangate status`'s client.
final class CameraControlRequestTests: XCTestCase {
    let size = FrameSize(width: 32, height: 16)

    func fakeCamera(logs: LogCapture = LogCapture(), controls: [CameraControl] = []) -> (FakeV4L2Device, V4L2Camera) {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [size])])
        fake.controls = [
            .init(id: 0x0098_0900, name: "Brightness", minimum: 0, maximum: 255, defaultValue: 128, value: 128),
            .init(id: 0x0098_0901, name: "Contrast", minimum: 0, maximum: 255, step: 5, defaultValue: 64, value: 64),
            .init(id: 0x009a_0901, name: "Auto Exposure", type: V4L2_CTRL_TYPE_MENU, minimum: 0, maximum: 3,
                  defaultValue: 3, value: 3),
            .init(id: 0x0098_0904, name: "Button", type: V4L2_CTRL_TYPE_BUTTON, minimum: 0, maximum: 0,
                  defaultValue: 0, value: 0),
        ]
        var s = CaptureSettings()
        s.width = size.width
        s.height = size.height
        s.controls = controls
        return (fake, V4L2Camera(device: "/dev/video0", settings: s, logger: logs.logger, calls: fake))
    }

    func slot(_ camera: FrameSource) -> CameraControlsSlot {
        let slot = CameraControlsSlot()
        slot.hold(source: camera.name, controls: camera.liveControls)
        return slot
    }

    func testControlsListsTheIntBoolAndMenuControlsWithTheirValues() throws {
        let (_, camera) = fakeCamera()
        try camera.open()
        defer { camera.close() }
        let answer = try XCTUnwrap(CameraControlRequests.answer("controls", slot: slot(camera)))
        XCTAssertEqual(answer, #"{"controls":[{"key":"brightness","name":"Brightness","type":"int","min":0,"max":255,"step":1,"default":128,"value":128},"#
                       + #"{"key":"contrast","name":"Contrast","type":"int","min":0,"max":255,"step":5,"default":64,"value":64},"#
                       + #"{"key":"auto_exposure","name":"Auto Exposure","type":"menu","min":0,"max":3,"step":1,"default":3,"value":3}]}"#)
        let read = try CameraControlRequests.readings(answer: Array(answer.utf8))
        XCTAssertEqual(read.map(\.key), ["brightness", "contrast", "auto_exposure"])
        XCTAssertEqual(read.first?.value, 128)
    }

    func testControlSetsTheValueAndAnswersWhatReadsBack() throws {
        let (fake, camera) = fakeCamera()
        try camera.open()
        defer { camera.close() }
        let answer = try XCTUnwrap(CameraControlRequests.answer("control Brightness=200", slot: slot(camera)))
        XCTAssertEqual(answer, #"{"control":{"key":"brightness","value":200}}"#)
        XCTAssertEqual(fake.controls[0].value, 200)
        let (key, value) = try CameraControlRequests.setting(answer: Array(answer.utf8))
        XCTAssertEqual(key, "brightness")
        XCTAssertEqual(value, 200)
    }

    func testRangeAndNameErrorsNameTheControlAndWhatIsAllowed() throws {
        let (fake, camera) = fakeCamera()
        try camera.open()
        defer { camera.close() }
        let slot = slot(camera)
        let range = try XCTUnwrap(CameraControlRequests.answer("control brightness=300", slot: slot))
        XCTAssertTrue(range.hasPrefix(#"{"error":"#), range)
        XCTAssertTrue(range.contains("brightness=300 is out of range; allowed 0..255"), range)
        let unknown = try XCTUnwrap(CameraControlRequests.answer("control zoom=1", slot: slot))
        XCTAssertTrue(unknown.contains("has no control 'zoom'; it has: brightness, contrast, auto_exposure"), unknown)
        let button = try XCTUnwrap(CameraControlRequests.answer("control button=0", slot: slot))
        XCTAssertTrue(button.contains("button is a button control"), button)
        let bad = try XCTUnwrap(CameraControlRequests.answer("control brightness=high", slot: slot))
        XCTAssertTrue(bad.contains("integer VALUE"), bad)
        XCTAssertThrowsError(try CameraControlRequests.setting(answer: Array(range.utf8))) { error in
            XCTAssertTrue("\(error)".contains("allowed 0..255"), "\(error)")
        }
        XCTAssertEqual(fake.controls[0].value, 128, "nothing set")
        XCTAssertNil(CameraControlRequests.answer("status", slot: slot), "not a control request")
    }

    func testAClosedCameraRefusesAndAReopenedOneGetsTheTriedValueAfterTheConfiguredOnes() throws {
        let logs = LogCapture()
        let (fake, camera) = fakeCamera(logs: logs, controls: [CameraControl(name: "brightness", value: 10),
                                                               CameraControl(name: "contrast", value: 20)])
        try camera.open()
        let slot = slot(camera)
        XCTAssertEqual(CameraControlRequests.answer("control brightness=90", slot: slot), #"{"control":{"key":"brightness","value":90}}"#)
        camera.close()
        let closed = try XCTUnwrap(CameraControlRequests.answer("controls", slot: slot))
        XCTAssertTrue(closed.contains("is not open now"), closed)
        // The camera vanished and came back at its defaults: the configured values, then the tried one.
        fake.controls[0].value = 128
        fake.controls[1].value = 64
        let before = fake.log.count
        try camera.open()
        defer { camera.close() }
        XCTAssertEqual(fake.log[before...].filter { $0.hasPrefix("S_CTRL") },
                       ["S_CTRL brightness=10", "S_CTRL contrast=20", "S_CTRL brightness=90"])
        XCTAssertEqual(fake.controls[0].value, 90)
        XCTAssertEqual(fake.controls[1].value, 20)
        XCTAssertEqual(camera.controlPanel.tried, [CameraControl(name: "brightness", value: 90)])
    }

    func testASimulatedSourceHasNoControls() throws {
        var s = CaptureSettings()
        s.camera = "sim:HELLO"
        let sim = try SourceFactory.make(s, logger: LogCapture().logger)
        let slot = slot(sim)
        for request in ["controls", "control brightness=1"] {
            let answer = try XCTUnwrap(CameraControlRequests.answer(request, slot: slot))
            XCTAssertEqual(answer, #"{"error":"the source sim:HELLO has no camera controls (a simulated or replayed source); only a V4L2 camera has them"}"#)
        }
    }

    /// Through a real status socket, with the client `scangate status --control` uses.
    func testTheSocketAnswersControlRequests() throws {
        let path = try TestFiles.temporaryDirectory() + "/run/" + StatusSocket.fileName
        let (fake, camera) = fakeCamera()
        try camera.open()
        defer { camera.close() }
        let socket = try StatusSocket(path: path, group: nil, provider: { StatusReport(status: "scanning", version: "t", pid: 1, uptimeSeconds: 0) },
                                      controls: slot(camera), logger: LogCapture().logger)
        defer { socket.close() }
        let listed = try StatusCommand.ask(path, request: "controls").get()
        XCTAssertEqual(try CameraControlRequests.readings(answer: listed).map(\.key), ["brightness", "contrast", "auto_exposure"])
        let set = try StatusCommand.ask(path, request: "control contrast=100").get()
        XCTAssertEqual(try CameraControlRequests.setting(answer: set).value, 100)
        XCTAssertEqual(fake.controls[1].value, 100)
        let refused = String(decoding: try StatusCommand.ask(path, request: "control contrast=256").get(), as: UTF8.self)
        XCTAssertTrue(refused.contains("contrast=256 is out of range; allowed 0..255 in steps of 5"), refused)
        let unknown = String(decoding: try StatusCommand.ask(path, request: "focus").get(), as: UTF8.self)
        XCTAssertTrue(unknown.contains("'control NAME=VALUE'"), unknown)
    }

    /// `scangate status --control NAME=VALUE [--save]` as a command: exit 0 and the line written, exit 2 for a
    /// refused value (nothing written), exit 2 before asking when --save has no file to write.
    func testTheStatusCommandTriesSavesAndRefuses() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/" + StatusSocket.fileName
        let conf = dir + "/scangate.conf"
        let original = "# kiosk\n[camera]\ncamera-control = brightness=100 ; first guess\n\n[service]\nstatus-socket = \(path)\n"
        XCTAssertEqual(FileDescriptor.open(conf, O_WRONLY | O_CREAT | O_TRUNC).flatMap { fd in
            fd.writeAll(Array(original.utf8)).flatMap { fd.close() } }.map { true }, .success(true))
        let (fake, camera) = fakeCamera()
        try camera.open()
        defer { camera.close() }
        let socket = try StatusSocket(path: path, group: nil, provider: { StatusReport(status: "scanning", version: "t", pid: 1, uptimeSeconds: 0) },
                                      controls: slot(camera), logger: LogCapture().logger)
        defer { socket.close() }
        XCTAssertEqual(StatusCommand.run(["--controls", "--config", conf]), ExitCode.success.rawValue)
        XCTAssertEqual(StatusCommand.run(["--control", "brightness=999", "--save", "--config", conf]), ExitCode.usage.rawValue)
        XCTAssertEqual(fake.controls[0].value, 128)
        XCTAssertEqual(StatusCommand.run(["--control", "Brightness=77", "--save", "--config", conf]), ExitCode.success.rawValue)
        XCTAssertEqual(fake.controls[0].value, 77)
        let written = try XCTUnwrap(String(validating: try ConfigFileReader.readAll(path: conf), as: UTF8.self))
        XCTAssertEqual(written, "# kiosk\n[camera]\ncamera-control = brightness=77\n\n[service]\nstatus-socket = \(path)\n")
        XCTAssertEqual(StatusCommand.run(["--control", "brightness=5", "--save", "--config", dir + "/missing.conf",
                                          "--status-socket", path]), ExitCode.usage.rawValue)
        XCTAssertEqual(fake.controls[0].value, 77, "not tried when it could not be saved")
        XCTAssertEqual(StatusCommand.run(["--save", "--config", conf]), ExitCode.usage.rawValue)
        XCTAssertEqual(StatusCommand.run(["--controls", "--snapshot", "x.png", "--config", conf]), ExitCode.usage.rawValue)
    }
}


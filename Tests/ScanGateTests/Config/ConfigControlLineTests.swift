#if canImport(Glibc)
import Glibc
#endif
@testable import App
import Config
import Core
import Images
import Platform
import XCTest

/// `status --control NAME=VALUE --save`: the camera-control line written into the config file.
final class ConfigControlLineTests: XCTestCase {
    func testReplacesTheLineForTheSameControlAndKeepsEverythingElse() {
        let text = """
            # ScanGate at the front door
            [camera]
            camera = /dev/video0   ; the USB camera
            camera-control = Brightness=100
            ; the installer's exposure
            camera-control = exposure_time_absolute=300
            camera-control = brightness = 110

            [output]
            output = json

            """
        XCTAssertEqual(ConfigControlLine.setting("brightness", to: 200, in: text), """
            # ScanGate at the front door
            [camera]
            camera = /dev/video0   ; the USB camera
            camera-control = brightness=200
            ; the installer's exposure
            camera-control = exposure_time_absolute=300

            [output]
            output = json

            """)
    }

    func testAppendsAfterTheLastCameraControlOrSettingOfTheSection() {
        let withControl = "[camera]\ncamera = /dev/video0\ncamera-control = gain=4\nwidth = 640\n# end of camera\n\n[output]\noutput = json\n"
        XCTAssertEqual(ConfigControlLine.setting("Exposure Time, Absolute", to: 250, in: withControl),
                       "[camera]\ncamera = /dev/video0\ncamera-control = gain=4\ncamera-control = exposure_time_absolute=250\n"
                       + "width = 640\n# end of camera\n\n[output]\noutput = json\n")
        let plain = "[camera]\ncamera = /dev/video0\n# a comment after\n\n[output]\noutput = json"
        XCTAssertEqual(ConfigControlLine.setting("gain", to: 3, in: plain),
                       "[camera]\ncamera = /dev/video0\ncamera-control = gain=3\n# a comment after\n\n[output]\noutput = json\n")
        let empty = "# only a comment\n[camera]\n"
        XCTAssertEqual(ConfigControlLine.setting("gain", to: 3, in: empty), "# only a comment\n[camera]\ncamera-control = gain=3\n")
    }

    func testCreatesTheCameraSectionWhenThereIsNone() {
        XCTAssertEqual(ConfigControlLine.setting("gain", to: 7, in: "# comment\n[output]\noutput = json\n"),
                       "# comment\n[output]\noutput = json\n\n[camera]\ncamera-control = gain=7\n")
        XCTAssertEqual(ConfigControlLine.setting("gain", to: 7, in: ""), "[camera]\ncamera-control = gain=7\n")
        // A camera-control under another section is not the one [camera] reads: left as it is.
        XCTAssertEqual(ConfigControlLine.setting("gain", to: 7, in: "[output]\n; camera-control = gain=1\n"),
                       "[output]\n; camera-control = gain=1\n\n[camera]\ncamera-control = gain=7\n")
    }

    func testWritesAtomicallyKeepsTheModeAndCheckConfigAcceptsIt() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.conf"
        let original = "# kiosk\n[camera]\ncamera = /dev/video0\ncamera-control = brightness=100\n\n[service]\nstatus-socket = auto\n"
        try FileBytes.write(Array(original.utf8), to: path)
        XCTAssertEqual(chmod(path, 0o640), 0)
        XCTAssertNil(ConfigControlLine.problem(writing: path))
        try ConfigControlLine.write("brightness", to: 200, file: path)
        try ConfigControlLine.write("contrast", to: 30, file: path)
        let written = String(decoding: try FileBytes.read(path: path), as: UTF8.self)
        XCTAssertEqual(written, "# kiosk\n[camera]\ncamera = /dev/video0\ncamera-control = brightness=200\n"
                       + "camera-control = contrast=30\n\n[service]\nstatus-socket = auto\n")
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o640)
        XCTAssertEqual(try Directory.entries(dir).filter { $0.contains("tmp") }, [], "no temporary file left")
        let settings = try Configuration.resolve(configPath: path, flagAssignments: [])
        XCTAssertEqual(settings.capture.controls, [.init(name: "brightness", value: 200), .init(name: "contrast", value: 30)])
        XCTAssertEqual(CheckConfigCommand.run([path]), ExitCode.success.rawValue)
    }

    func testAReadOnlyOrMissingFileIsNamed() throws {
        let dir = try TestFiles.temporaryDirectory()
        let missing = dir + "/none.conf"
        XCTAssertEqual(ConfigControlLine.problem(writing: missing),
                       "cannot write \(missing): it does not exist (give --config the daemon's config file)")
        let path = dir + "/ro.conf"
        try FileBytes.write(Array("[camera]\n".utf8), to: path)
        XCTAssertEqual(chmod(path, 0o444), 0)
        if geteuid() != 0 {
            XCTAssertEqual(ConfigControlLine.problem(writing: path)?.hasPrefix("cannot write \(path): "), true)
        }
        XCTAssertThrowsError(try ConfigControlLine.write("gain", to: 1, file: missing)) { error in
            XCTAssertTrue("\(error)".contains(missing), "\(error)")
        }
    }
}

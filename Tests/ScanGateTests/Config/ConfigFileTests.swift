import Config
import Core
import Foundation
import XCTest
import Settings

/// The INI config file: parsed by libinih, mapped onto the option table, every error path named.
final class ConfigFileTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = try TestFiles.temporaryDirectory()
    }

    private func write(_ text: String, name: String = "scangate.conf") -> String {
        let path = directory + "/" + name
        ConfigTestFiles.write(text, to: path)
        return path
    }

    /// The error message of loading and applying `text`, or nil when it is valid.
    private func error(_ text: String) -> String? {
        let path = write(text)
        do {
            _ = try Configuration.resolve(configPath: path, flagAssignments: [])
            return nil
        } catch {
            return error.message.replacingOccurrences(of: directory + "/", with: "")
        }
    }

    func testValuesFromTheFileReachTheSettings() throws {
        let path = write("""
            # comment
            ; another comment
            [camera]
            camera = sim:HELLO
            width = 800   ; inline comment
            height=600
            fast = yes
            camera-control = focus_absolute=10
            camera-control = gain=3

            [decoder]
            symbologies = qr, ean13
            [debounce]
            hold-off-ms = 2500
            [output]
            output = text
            [service]
            log-level = debug
            """)
        let entries = try ConfigFile.load(path: path)
        XCTAssertEqual(entries.map(\.option.name), ["camera", "width", "height", "fast", "camera-control",
                                                    "camera-control", "symbologies", "hold-off-ms", "output",
                                                    "log-level"])
        XCTAssertEqual(entries.map(\.line), [4, 5, 6, 7, 8, 9, 12, 14, 16, 18])
        XCTAssertEqual(entries[1].value, "800")
        let s = try Configuration.resolve(configPath: path, flagAssignments: [])
        XCTAssertEqual(s.capture.camera, "sim:HELLO")
        XCTAssertEqual(s.capture.width, 800)
        XCTAssertEqual(s.capture.height, 600)
        XCTAssertTrue(s.capture.fast)
        XCTAssertEqual(s.capture.controls, [CameraControl(name: "focus_absolute", value: 10),
                                            CameraControl(name: "gain", value: 3)])
        XCTAssertEqual(s.decoder.symbologies, [.qr, .ean13])
        XCTAssertEqual(s.debounce.holdOffMs, 2500)
        XCTAssertEqual(s.output.format.rawValue, "text")
        XCTAssertEqual(s.logLevel, .debug)
    }

    func testCommandLineFlagsOverrideTheFile() throws {
        let path = write("[camera]\nwidth = 800\nheight = 600\n")
        let flags = try CommandLineParser.parse(["--width", "1024", "--fps", "30"])
        let s = try Configuration.resolve(configPath: path, flagAssignments: flags.assignments)
        XCTAssertEqual(s.capture.width, 1024, "flag wins over the file")
        XCTAssertEqual(s.capture.height, 600, "file wins over the default")
        XCTAssertEqual(s.capture.fps, 30)
        XCTAssertEqual(try Configuration.resolve(configPath: nil, flagAssignments: []), RunSettings())
    }

    func testQuotedValuesKeepBlanksAndSemicolons() throws {
        let entries = try ConfigFile.parse("[camera]\ncamera = \" sim:A;B \"\n", name: "q.conf")
        XCTAssertEqual(entries.first?.value, " sim:A;B ")
    }

    func testEmptyFileGivesDefaults() throws {
        XCTAssertEqual(try Configuration.resolve(configPath: write(""), flagAssignments: []), RunSettings())
    }

    func testUnknownSectionIsNamedWithTheSectionsAllowed() {
        let message = error("[camera]\nwidth = 640\n[cameras]\nwidth = 320\n")
        XCTAssertEqual(message, "scangate.conf:3: unknown section [cameras] (sections: "
                       + OptionTable.sections(of: OptionTable.all).map { "[\($0.rawValue)]" }.joined(separator: ", ") + ")")
    }

    func testUnknownSectionWithoutKeysIsStillAnError() {
        XCTAssertEqual(error("[camera]\nwidth = 640\n\n[extra]\n# nothing here\n")?.hasPrefix("scangate.conf:4: unknown section [extra]"),
                       true)
    }

    func testUnknownKeyListsTheKeysOfItsSection() throws {
        let message = try XCTUnwrap(error("[debounce]\nhold-off = 100\n"))
        let keys = OptionTable.all.filter { $0.section == .debounce }.map(\.name).joined(separator: ", ")
        XCTAssertEqual(message, "scangate.conf:2: unknown key 'hold-off' in [debounce] (keys in [debounce]: \(keys))")
        XCTAssertTrue(message.contains("hold-off-ms"))
    }

    func testKeyInTheWrongSectionSaysWhereItBelongs() {
        XCTAssertEqual(error("[camera]\nwidth = 640\n[decoder]\nhold-off-ms = 100\n"),
                       "scangate.conf:4: key 'hold-off-ms' belongs in [debounce], not [decoder]")
    }

    func testKeyBeforeAnySection() throws {
        let message = try XCTUnwrap(error("width = 640\n"))
        XCTAssertTrue(message.hasPrefix("scangate.conf:1: key 'width' is outside any section; it belongs in [camera]"), message)
    }

    func testWrongTypeUsesTheOptionsOwnMessage() {
        XCTAssertEqual(error("[camera]\n\nwidth = wide\n"),
                       "scangate.conf:3: [camera] width: 'wide' is not a whole number from 16 to 4096")
        XCTAssertEqual(error("[camera]\nfast = maybe\n"), "scangate.conf:2: [camera] fast: 'maybe' is not yes, no, true, false, on or off")
        XCTAssertEqual(error("[output]\noutput = xml\n"),
                       "scangate.conf:2: [output] output: 'xml' is not one of json, text, none")
    }

    func testOutOfRangeValue() {
        XCTAssertEqual(error("[camera]\ncamera-buffers = 9\n"),
                       "scangate.conf:2: [camera] camera-buffers: '9' is not a whole number from 2 to 4")
    }

    func testSyntaxErrorNamesTheLine() {
        XCTAssertEqual(error("[camera]\nwidth = 640\nthis line has no equals sign\n"),
                       "scangate.conf:3: syntax error: expected [section], key = value, or a comment (# or ;)")
        XCTAssertEqual(error("[camera\nwidth = 640\n")?.hasPrefix("scangate.conf:1: syntax error"), true)
    }

    func testKeySetTwiceIsAnError() {
        XCTAssertEqual(error("[camera]\nwidth = 640\nheight = 480\nwidth = 800\n"),
                       "scangate.conf:4: [camera] width is set twice (first on line 2); keep one")
    }

    func testContinuationLinesAreRejected() throws {
        let message = try XCTUnwrap(error("[camera]\ncamera = sim:A\n  more\n"))
        XCTAssertTrue(message.hasPrefix("scangate.conf:3: [camera] camera: indented continuation"), message)
    }

    /// Issue 27: a line past libinih's 197 characters (a long allow-regex) was refused. Lines up to 4096
    /// characters are read whole, by inih's rules (an inline `;` comment after a blank, blanks trimmed);
    /// longer ones, and long comments or sections, are refused with the line.
    func testLongLinesAreReadWholeUpTo4096Characters() throws {
        let regex = "^(" + (0..<60).map { "GATE-\($0)" }.joined(separator: "|") + ")$"
        XCTAssertGreaterThan(regex.count, 400)
        let entries = try ConfigFile.parse("[filter]\nallow-regex = \(regex)   ; the gates\n[camera]\ncamera = sim:A\n", name: "scangate.conf")
        XCTAssertEqual(entries.map(\.value), [regex, "sim:A"])
        XCTAssertEqual(entries.map(\.line), [2, 4])
        // check-config's rendering of it reads back the same.
        var settings = RunSettings()
        try ConfigFile.apply(entries, from: "scangate.conf", to: &settings)
        let rendered = ConfigFileRendering.effective(settings, header: [])
        var again = RunSettings()
        try ConfigFile.apply(try ConfigFile.parse(rendered, name: "rendered"), from: "rendered", to: &again)
        XCTAssertEqual(again.filter.allowRegex, regex)
        let message = try XCTUnwrap(error("[camera]\ncamera = sim:" + String(repeating: "A", count: 5000) + "\n"))
        XCTAssertTrue(message.hasPrefix("scangate.conf:2: line is longer than 4096 characters"), message)
        XCTAssertNil(error("[camera]\n# " + String(repeating: "A", count: 300) + "\ncamera = sim:A\n"), "a long comment is a comment")
        let section = try XCTUnwrap(error("[" + String(repeating: "a", count: 300) + "]\n"))
        XCTAssertTrue(section.hasPrefix("scangate.conf:1: a line of 302 characters must be `key = value` or a comment"), section)
    }

    func testUnreadableFileIsNamed() throws {
        XCTAssertEqual(error("").map { _ in "" }, nil)
        do {
            _ = try ConfigFile.load(path: directory + "/missing.conf")
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.message, "cannot read config file \(directory)/missing.conf: No such file or directory (ENOENT)")
        }
        do {
            _ = try ConfigFile.load(path: directory)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.message, "cannot read config file \(directory): it is a directory, not a regular file")
        }
    }

    func testBinaryFileIsRejected() throws {
        let message = try XCTUnwrap(error("[camera]\nwidth = 6\u{0}40\n"))
        XCTAssertTrue(message.hasPrefix("scangate.conf:2: contains a NUL byte"), message)
    }
}

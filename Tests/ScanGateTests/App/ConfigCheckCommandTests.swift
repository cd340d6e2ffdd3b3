import App
import Config
import Core
import Foundation
import XCTest
import Settings

/// `scangate check-config` and the generated example, deploy/scangate.conf.
final class ConfigCheckCommandTests: XCTestCase {
    /// Runs the command with fds 1 and 2 redirected to files; returns (exit, stdout, stderr).
    private func checkConfig(_ args: [String]) throws -> (Int32, String, String) {
        let dir = try TestFiles.temporaryDirectory()
        fflush(nil)
        let savedOut = dup(1), savedErr = dup(2)
        let outFD = open(dir + "/out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let errFD = open(dir + "/err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        dup2(outFD, 1); dup2(errFD, 2)
        let code = CheckConfigCommand.run(args)
        dup2(savedOut, 1); dup2(savedErr, 2)
        close(outFD); close(errFD); close(savedOut); close(savedErr)
        return (code, try ConfigTestFiles.read(dir + "/out"), try ConfigTestFiles.read(dir + "/err"))
    }

    private func tempFile(_ text: String) throws -> String {
        let path = try TestFiles.temporaryDirectory() + "/scangate.conf"
        ConfigTestFiles.write(text, to: path)
        return path
    }

    func testValidFilePrintsEveryKeyGroupedBySection() throws {
        let path = try tempFile("[camera]\nwidth = 800\ncamera-control = gain=2\ncamera-control = focus_absolute=5\n[debounce]\nhold-off-ms = 2000\n")
        let (code, out, err) = try checkConfig([path])
        XCTAssertEqual(code, 0)
        XCTAssertEqual(err, "")
        XCTAssertTrue(out.contains("[camera]\ncamera = /dev/video0\nwidth = 800\nheight = 480\n"), out)
        XCTAssertTrue(out.contains("[debounce]\nhold-off-ms = 2000\n"), out)
        var expected = RunSettings()
        expected.capture.width = 800
        expected.capture.controls = [CameraControl(name: "gain", value: 2), CameraControl(name: "focus_absolute", value: 5)]
        expected.debounce.holdOffMs = 2000
        for option in OptionTable.all {
            XCTAssertTrue(out.contains("\n\(option.name) =") || out.contains("\n#\(option.name) ="), "missing \(option.name)")
        }
        // What check-config prints is itself a valid config giving the same settings.
        XCTAssertEqual(try Configuration.resolve(configPath: tempFile(out), flagAssignments: []), expected)
    }

    func testFlagsAfterTheFileAreApplied() throws {
        let path = try tempFile("[camera]\nwidth = 800\n")
        let (code, out, _) = try checkConfig([path, "--width", "320"])
        XCTAssertEqual(code, 0)
        XCTAssertTrue(out.contains("\nwidth = 320\n"), out)
    }

    func testInvalidFileExits2WithOneLineOnStderr() throws {
        let path = try tempFile("[camera]\nwidth = 800\nfps = fast\n")
        let (code, out, err) = try checkConfig([path])
        XCTAssertEqual(code, 2)
        XCTAssertEqual(out, "")
        XCTAssertEqual(err, "scangate check-config: \(path):3: [camera] fps: 'fast' is not a number from 0.5 to 240\n")
    }

    func testMissingFileExits2() throws {
        let (code, out, err) = try checkConfig(["/nonexistent/scangate.conf"])
        XCTAssertEqual(code, 2)
        XCTAssertEqual(out, "")
        XCTAssertEqual(err, "scangate check-config: cannot read config file /nonexistent/scangate.conf: No such file or directory (ENOENT)\n")
    }

    func testExampleParsesToTheDefaults() throws {
        let (code, example, _) = try checkConfig(["--example"])
        XCTAssertEqual(code, 0)
        XCTAssertEqual(try Configuration.resolve(configPath: tempFile(example), flagAssignments: []), RunSettings())
        // Uncommenting every key with a default changes nothing: the documented defaults are the real ones.
        let uncommented = example.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard line.hasPrefix("#"), let option = OptionTable.all.first(where: { line.hasPrefix("#\($0.name) =") }),
                  !option.defaultText.isEmpty else { return line }
            return line.dropFirst()
        }.joined(separator: "\n")
        XCTAssertEqual(try Configuration.resolve(configPath: tempFile(uncommented), flagAssignments: []), RunSettings(),
                       "an option's default text does not apply to its default value")
    }

    /// deploy/scangate.conf is the generated example, so it documents every key and its default.
    /// After adding options: `scangate check-config --example > deploy/scangate.conf` (or deploy/generate-conf).
    func testDeployedExampleDocumentsEveryKeyWithItsDefault() throws {
        let path = ConfigTestFiles.repositoryRoot + "/deploy/scangate.conf"
        let generated = ConfigFileRendering.example()
        if ProcessInfo.processInfo.environment["SCANGATE_REGENERATE_CONF"] == "1" {
            ConfigTestFiles.write(generated, to: path)
        }
        let text = try ConfigTestFiles.read(path)
        var section = ""
        var found: [String: (section: String, value: String)] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("[") { section = String(line.dropFirst().dropLast()); continue }
            guard line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { continue }
            let key = line.dropFirst()[..<eq].trimmingCharacters(in: .whitespaces)
            found[key] = (section, line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces))
        }
        for option in OptionTable.all {
            guard let entry = found[option.name] else {
                XCTFail("deploy/scangate.conf lacks \(option.name): run deploy/generate-conf"); continue
            }
            XCTAssertEqual(entry.section, option.section.rawValue, "\(option.name) is in the wrong section")
            let value = entry.value.count >= 2 && entry.value.hasPrefix("\"") && entry.value.hasSuffix("\"")
                ? String(entry.value.dropFirst().dropLast()) : entry.value
            XCTAssertEqual(value, option.defaultText, "\(option.name): default in deploy/scangate.conf is stale")
        }
        XCTAssertEqual(text, generated, "deploy/scangate.conf is stale: run deploy/generate-conf")
    }
}

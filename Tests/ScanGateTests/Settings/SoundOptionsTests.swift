import XCTest
import Core
@testable import Config
@testable import Sound
import Settings

final class SoundOptionsTests: XCTestCase {
    private func parse(_ arguments: [String]) throws -> RunSettings {
        var settings = RunSettings()
        let result = try CommandLineParser.parse(arguments)
        try CommandLineParser.apply(result.assignments, to: &settings)
        return settings
    }

    private func usageError(_ arguments: [String]) -> String {
        do {
            _ = try parse(arguments)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testBeepIsOffByDefault() throws {
        let s = try parse([])
        XCTAssertFalse(s.beep.enabled)
        XCTAssertNil(BeepFeedback.make(settings: s.beep, logger: Logger(sink: { _ in })))
        XCTAssertEqual(OptionTable.find("beep")?.show(s), "off")
        XCTAssertEqual(OptionTable.find("beep-error")?.show(s), "700:90,0:60,700:90")
    }

    func testAllBeepOptions() throws {
        let s = try parse(["--beep", "1800:80,0:40,1800:80", "--beep-error=400:200", "--beep-device", "hw:Loopback,0,0",
                           "--beep-volume", "0.3"])
        XCTAssertTrue(s.beep.enabled)
        XCTAssertEqual(s.beep.good?.description, "1800:80,0:40,1800:80")
        XCTAssertEqual(s.beep.error?.description, "400:200")
        XCTAssertEqual(s.beep.device, "hw:Loopback,0,0")
        XCTAssertEqual(s.beep.volume, 0.3)
        for name in ["beep", "beep-error", "beep-device", "beep-volume"] {
            XCTAssertEqual(OptionTable.find(name)?.section, .beep, name)
        }
        XCTAssertEqual(OptionTable.find("beep-device")?.show(s), "hw:Loopback,0,0")
        XCTAssertEqual(OptionTable.find("beep-volume")?.show(s), "0.3")
    }

    func testDefaultAndOffKeywords() throws {
        XCTAssertEqual(try parse(["--beep", "default"]).beep.good, BeepPattern.defaultGood)
        XCTAssertNil(try parse(["--beep", "2000:100", "--beep", "off"]).beep.good)
        XCTAssertNil(try parse(["--beep", "default", "--beep-error", "off"]).beep.error)
    }

    func testBadValuesNameTheFlagAndWhatIsAllowed() {
        var message = usageError(["--beep", "2000"])
        XCTAssertTrue(message.hasPrefix("--beep: '2000' is not a beep pattern"), message)
        XCTAssertTrue(message.contains("HZ:MS") && message.contains("'default', 'off'"), message)
        message = usageError(["--beep-error", "99999:10"])
        XCTAssertTrue(message.hasPrefix("--beep-error: '99999:10' frequency 99999 Hz"), message)
        message = usageError(["--beep-volume", "1.5"])
        XCTAssertEqual(message, "--beep-volume: '1.5' is not a number from 0 to 1")
        message = usageError(["--beep-device", "my device"])
        XCTAssertTrue(message.hasPrefix("--beep-device: 'my device' is not an ALSA device name"), message)
        XCTAssertTrue(usageError(["--beep"]).contains("--beep needs a value"))
    }
}

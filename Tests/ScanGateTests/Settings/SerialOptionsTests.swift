import XCTest
import Components
@testable import Config
@testable import Core
@testable import Serial
import Settings

/// The [serial] options: names, defaults, values and the errors for values that are not allowed.
final class SerialOptionsTests: XCTestCase {
    private func parse(_ arguments: [String]) throws -> RunSettings {
        var settings = RunSettings()
        let result = try CommandLineParser.parse(arguments)
        try CommandLineParser.apply(result.assignments, to: &settings)
        return settings
    }

    private func error(_ arguments: [String]) -> String {
        do {
            _ = try parse(arguments)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testOptionNamesMatchTheBrief() {
        let names = OptionTable.all.filter { $0.section == .serial }.map(\.name)
        XCTAssertEqual(names, ["serial", "serial-baud", "serial-format", "serial-rtscts", "serial-rs485", "serial-framing",
                               "serial-prefix", "serial-suffix", "serial-checksum", "serial-payload",
                               "serial-symbology-prefix", "serial-unsafe", "serial-ttl-ms", "serial-write-timeout-ms",
                               "serial-reply-grant", "serial-reply-deny", "serial-reply-timeout-ms"])
    }

    func testDefaults() throws {
        let s = try parse([]).serial
        XCTAssertNil(s.path)
        XCTAssertEqual(s.baud.bitsPerSecond, 9600)
        XCTAssertEqual(s.format.description, "8N1")
        XCTAssertEqual(s.framing, .plain)
        XCTAssertEqual(s.effectiveSuffix, [0x0D, 0x0A])
        XCTAssertEqual(s.checksum, .none)
        XCTAssertEqual(s.payloadEncoding, .text)
        XCTAssertEqual(s.unsafeBytes, .reject)
        XCTAssertEqual(s.ttlMs, 5000)
        XCTAssertEqual(s.writeTimeoutMs, 1000)
        XCTAssertFalse(s.rtscts || s.rs485 || s.symbologyPrefix)
    }

    func testAllOptionsApply() throws {
        let s = try parse(["--serial", "/dev/ttyUSB0", "--serial-baud", "115200", "--serial-format", "7E1",
                           "--serial-rtscts", "--serial-framing", "stx-etx", "--serial-prefix", #"\x1B"#,
                           "--serial-suffix=\r\n", "--serial-checksum", "crc16", "--serial-payload", "hex",
                           "--serial-symbology-prefix", "--serial-unsafe", "escape", "--serial-ttl-ms", "2000",
                           "--serial-write-timeout-ms", "250"]).serial
        XCTAssertEqual(s.path, "/dev/ttyUSB0")
        XCTAssertEqual(s.baud.bitsPerSecond, 115200)
        XCTAssertEqual(s.format, SerialLineFormat("7E1"))
        XCTAssertTrue(s.rtscts)
        XCTAssertEqual(s.framing, .stxEtx)
        XCTAssertEqual(s.prefix, [0x1B])
        XCTAssertEqual(s.suffix, [0x0D, 0x0A])
        XCTAssertEqual(s.checksum, .crc16)
        XCTAssertEqual(s.payloadEncoding, .hex)
        XCTAssertTrue(s.symbologyPrefix)
        XCTAssertEqual(s.unsafeBytes, .escape)
        XCTAssertEqual(s.ttlMs, 2000)
        XCTAssertEqual(s.writeTimeoutMs, 250)
    }

    func testShowRendersEscapes() throws {
        let s = try parse(["--serial-prefix", #"\x02ID"#])
        XCTAssertEqual(OptionTable.find("serial-prefix")?.show(s), #"\x02ID"#)
        XCTAssertEqual(OptionTable.find("serial-suffix")?.show(s), "auto", "the framing's own default")
        XCTAssertEqual(s.serial.effectiveSuffix, [0x0D, 0x0A])
        let explicit = try parse(["--serial-suffix", #"\r\n"#])
        XCTAssertEqual(OptionTable.find("serial-suffix")?.show(explicit), #"\r\n"#)
    }

    func testBadValuesNameTheFlagAndWhatIsAllowed() {
        XCTAssertEqual(error(["--serial-baud", "9601"]),
                       "--serial-baud: '9601' is not a standard rate (allowed: 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600)")
        XCTAssertEqual(error(["--serial-format", "9N1"]),
                       "--serial-format: '9N1' is not a character format (DATA BITS 5-8, PARITY N|E|O, STOP BITS 1|2, e.g. 8N1, 7E1, 8E1, 8O1, 7O1, 7N1, 8N2)")
        XCTAssertEqual(error(["--serial-framing", "stx"]), "--serial-framing: 'stx' is not one of plain, stx-etx")
        XCTAssertEqual(error(["--serial-checksum", "crc32"]),
                       "--serial-checksum: 'crc32' is not one of none, lrc, crc16, crc16-modbus")
        XCTAssertEqual(error(["--serial-payload", "base64"]), "--serial-payload: 'base64' is not one of text, hex")
        XCTAssertEqual(error(["--serial-unsafe", "ignore"]), "--serial-unsafe: 'ignore' is not one of escape, strip, reject")
        XCTAssertEqual(error(["--serial-suffix", #"\q"#]),
                       #"--serial-suffix: '\q' has the unknown escape \q (escapes: \r \n \t \xNN \\)"#)
        XCTAssertEqual(error(["--serial-ttl-ms", "0"]), "--serial-ttl-ms: '0' is not a whole number from 100 to 600000")
        XCTAssertEqual(error(["--serial-write-timeout-ms", "x"]),
                       "--serial-write-timeout-ms: 'x' is not a whole number from 10 to 60000")
        XCTAssertEqual(error(["--serial", ""]), "--serial: is empty; give a tty path such as /dev/ttyUSB0")
        XCTAssertEqual(error(["--serial-prefix", String(repeating: "A", count: 17)]),
                       "--serial-prefix: '\(String(repeating: "A", count: 17))' is 17 bytes; at most 16 are allowed")
    }

    // MARK: Combinations (SerialSettings.validate, run by SerialSink.make)

    private func validation(_ arguments: [String]) -> String {
        do {
            try SerialOutput.validate(parse(["--serial", "/dev/ttyUSB0"] + arguments).serial)
            return "valid"
        } catch {
            return "\(error)"
        }
    }

    func testCombinationErrors() {
        XCTAssertEqual(validation([]), "valid")
        XCTAssertEqual(validation(["--serial-checksum", "lrc"]), "--serial-checksum lrc needs --serial-framing stx-etx")
        XCTAssertEqual(validation(["--serial-framing", "stx-etx", "--serial-checksum", "lrc"]), "valid")
        XCTAssertEqual(validation(["--serial-suffix", ""]),
                       #"--serial-suffix: plain framing needs a suffix that ends each frame (default \r\n)"#)
        XCTAssertEqual(validation(["--serial-framing", "stx-etx", "--serial-suffix", ""]), "valid")
        XCTAssertEqual(validation(["--serial-rs485", "--serial-rtscts"]),
                       "--serial-rs485 and --serial-rtscts cannot be combined (RS-485 drives RTS for the transmitter)")
        XCTAssertEqual(validation(["--serial-format", "7E1", "--serial-suffix", #"\xFF"#]),
                       "--serial-suffix: byte 0xFF does not fit 7 data bits (--serial-format 7E1)")
        XCTAssertEqual(validation(["--serial-payload", "hex", "--serial-suffix", "E"]),
                       #"--serial-suffix: 'E' also appears in the hex payload (--serial-payload hex), so a payload could fake a frame boundary; use control bytes such as \r\n"#)
        XCTAssertEqual(validation(["--serial-unsafe", "escape", "--serial-prefix", "x"]),
                       #"--serial-prefix: 'x' also appears in the escapes (--serial-unsafe escape), so a payload could fake a frame boundary; use control bytes such as \r\n"#)
        XCTAssertEqual(validation(["--serial-symbology-prefix", "--serial-suffix", ":"]),
                       #"--serial-suffix: ':' also appears in the symbology tags (--serial-symbology-prefix), so a payload could fake a frame boundary; use control bytes such as \r\n"#)
        XCTAssertEqual(validation(["--serial-format", "6N1", "--serial-payload", "hex"]),
                       "--serial-format 6N1: 'A' from the hex payload (--serial-payload hex) does not fit 6 data bits")
    }

    func testNotConfiguredWithoutPathAndABadCombinationIsRefusedBeforeAnythingOpens() throws {
        guard case .output(let factory) = SerialOutput.component().role else { return XCTFail("serial is an output") }
        var settings = RunSettings()
        XCTAssertFalse(factory.isConfigured(settings))
        settings.serial.path = "/nonexistent/tty"
        settings.serial.checksum = .crc16
        XCTAssertTrue(factory.isConfigured(settings))
        XCTAssertThrowsError(try factory.validate(settings)) {
            XCTAssertEqual("\($0)", "--serial-checksum crc16 needs --serial-framing stx-etx")
        }
        settings.serial.replyGrant = Array("OK".utf8)
        settings.serial.replyDeny = Array("OK".utf8)
        settings.serial.checksum = .none
        XCTAssertThrowsError(try factory.validate(settings)) {
            XCTAssertTrue("\($0)".contains("--serial-reply-grant and --serial-reply-deny are the same line"))
        }
    }
}

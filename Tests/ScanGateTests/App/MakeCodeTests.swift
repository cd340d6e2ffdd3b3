@testable import App
import Core
import Decoding
import Images
import Settings
import Simulator
import XCTest

final class MakeCodeTests: XCTestCase {
    private func decodeFile(_ path: String) throws -> [DecodedSymbol] {
        try simulatorDecode(try ImageFile.read(path: path))
    }

    func testEveryECCLevelRoundTripsThroughAnImageFile() throws {
        let dir = try TestFiles.temporaryDirectory()
        for ecc in ["L", "M", "Q", "H"] {
            for ext in ["png", "pgm"] {
                let out = "\(dir)/\(ecc).\(ext)"
                XCTAssertEqual(MakeCodeCommand.run(["Hello, ScanGate \(ecc)", "--ecc", ecc, "--scale", "3", "--out", out]), 0)
                XCTAssertEqual(try decodeFile(out).map(\.data), [Array("Hello, ScanGate \(ecc)".utf8)], "\(ecc) \(ext)")
            }
        }
    }

    func testBinaryAndLongPayloadsRoundTrip() throws {
        let dir = try TestFiles.temporaryDirectory()
        let binary: [UInt8] = [0x00, 0xFF, 0x0D, 0x0A, 0x02, 0x03, 0x80, 0xC3, 0x28]
        try FileBytes.write(binary, to: dir + "/payload.bin")
        XCTAssertEqual(MakeCodeCommand.run(["--data-file", dir + "/payload.bin", "--out", dir + "/bin.png"]), 0)
        XCTAssertEqual(try decodeFile(dir + "/bin.png").map(\.data), [binary])

        XCTAssertEqual(MakeCodeCommand.run(["--escapes", #"A\x00B\r\n\xff"#, "--out", dir + "/esc.png"]), 0)
        XCTAssertEqual(try decodeFile(dir + "/esc.png").map(\.data), [[0x41, 0, 0x42, 13, 10, 0xFF]])

        let long = String((0..<1000).map { Character(Unicode.Scalar(UInt8(0x41 + $0 % 26))) })
        XCTAssertEqual(MakeCodeCommand.run([long, "--scale", "2", "--ecc", "L", "--out", dir + "/long.png"]), 0)
        XCTAssertEqual(try decodeFile(dir + "/long.png").map(\.data), [Array(long.utf8)])
    }

    func testLinearSymbologies() throws {
        let dir = try TestFiles.temporaryDirectory()
        for (symbology, payload, expected) in [("ean13", "400638133393", "4006381333931"), ("upca", "03600029145", "036000291452"),
                                               ("code128", "Code 128!", "Code 128!"), ("ean8", "9638507", "96385074")] {
            XCTAssertEqual(MakeCodeCommand.run([payload, "--symbology", symbology, "--scale", "2", "--out", "\(dir)/\(symbology).png"]), 0)
            XCTAssertEqual(try decodeFile("\(dir)/\(symbology).png").map { String(decoding: $0.data, as: UTF8.self) }, [expected])
        }
    }

    /// The formats zxing-cpp's writer and libqrencode's Micro QR draw, read back by the live zxing decoder;
    /// binary payloads byte-exact.
    func testNewFormatsRoundTripThroughTheLiveDecoder() throws {
        let dir = try TestFiles.temporaryDirectory()
        var settings = DecoderSettings()
        settings.symbologies = Set(Symbology.allCases)
        let zxing = ZXingDecoder(settings: settings)
        func decoded(_ path: String) throws -> [DecodedSymbol] {
            let image = try ImageFile.read(path: path)
            return zxing.decode(width: image.width, height: image.height, luma: image.pixels)
        }
        let binary: [UInt8] = [0x00, 0xFF, 0x0D, 0x0A, 0x80, 0xC3, 0x28, 0x41]
        try FileBytes.write(binary, to: dir + "/payload.bin")
        for name in ["DataMatrix", "Aztec", "PDF417"] {
            XCTAssertEqual(MakeCodeCommand.run(["--data-file", dir + "/payload.bin", "--symbology", name, "--scale", "4",
                                                "--out", "\(dir)/\(name).png"]), 0)
            XCTAssertEqual(try decoded("\(dir)/\(name).png").map(\.data), [binary], name)
            XCTAssertEqual(try decoded("\(dir)/\(name).png").map(\.symbology.zxingName), [name])
        }
        for (name, payload, expected) in [("MicroQRCode", "M-42", "M-42"), ("Code93", "CODE 93", "CODE 93"),
                                          ("ITF", "00123456", "00123456"), ("Codabar", "40156", "40156")] {
            XCTAssertEqual(MakeCodeCommand.run([payload, "--symbology", name, "--scale", "3", "--out", "\(dir)/\(name).png"]), 0)
            let found = try decoded("\(dir)/\(name).png")
            XCTAssertEqual(found.map { String(decoding: $0.data, as: UTF8.self) }, [expected], name)
            XCTAssertEqual(found.map(\.symbology.zxingName), [name])
        }
    }

    func testBadInputExitsTwo() throws {
        let dir = try TestFiles.temporaryDirectory()
        let cases: [[String]] = [
            [],
            ["A", "B"],
            ["A", "--ecc", "X"],
            ["A", "--ecc"],
            ["A", "--scale", "0"],
            ["A", "--symbology", "databar"],
            ["12345", "--symbology", "ITF"],
            [String(repeating: "x", count: 40), "--symbology", "MicroQRCode"],
            ["A", "--symbology", "MicroQRCode", "--ecc", "H"],
            ["A", "--out", dir + "/a.gif"],
            ["A", "--bogus"],
            ["123", "--symbology", "ean13"],
            ["--escapes", #"\q"#],
            ["--data-file", dir + "/missing.bin"],
            ["A", "--data-file", dir + "/x"],
            ["A", "--out", "/nonexistent/dir/a.png"],
            [String(repeating: "x", count: 3000), "--out", dir + "/big.png"],
        ]
        for args in cases { XCTAssertEqual(MakeCodeCommand.run(args), 2, "\(args.prefix(3))") }
        XCTAssertEqual(MakeCodeCommand.run(["--help"]), 0)
    }
}

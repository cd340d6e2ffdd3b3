import Config
import Core
import Settings
import XCTest

/// `[decoder]`: the decoder choice, the symbology names (zxing-cpp's, the older ones, `all`) and the
/// refusals, as check-config and run show them.
final class DecoderOptionsTests: XCTestCase {
    private func settings(_ text: String) throws -> DecoderSettings {
        let path = try TestFiles.temporaryDirectory() + "/scangate.conf"
        try TestFiles.write(text, to: path)
        return try Configuration.resolve(configPath: path, flagAssignments: []).decoder
    }

    func testDefaultsAreZXingQRAndTheInvertedRetry() {
        let d = DecoderSettings()
        XCTAssertEqual(d.engine, .zxing)
        XCTAssertEqual(d.symbologies, [.qr])
        XCTAssertTrue(d.invertRetry)
    }

    func testZXingNamesOlderNamesAndAllAreAccepted() throws {
        XCTAssertEqual(try settings("[decoder]\nsymbologies = QRCode, MicroQRCode, DataMatrix, Aztec, PDF417, EAN13\n").symbologies,
                       [.qr, .microqr, .datamatrix, .aztec, .pdf417, .ean13])
        XCTAssertEqual(try settings("[decoder]\nsymbologies = qr, EAN-13, Code 128, CODE-39, i25, databar-exp\n").symbologies,
                       [.qr, .ean13, .code128, .code39, .i25, .databarExp])
        XCTAssertEqual(try settings("[decoder]\nsymbologies = micro-qr-code, data_matrix, ITF, DataBarExpanded\n").symbologies,
                       [.microqr, .datamatrix, .i25, .databarExp])
        XCTAssertEqual(try settings("[decoder]\nsymbologies = all\n").symbologies, Set(Symbology.allCases))
        let zbar = try settings("[decoder]\ndecoder = zbar\nsymbologies = all\ninvert-retry = no\n")
        XCTAssertEqual(zbar.engine, .zbar)
        XCTAssertFalse(zbar.invertRetry)
        XCTAssertEqual(zbar.zbarSymbologies, Set(Symbology.allCases.filter { !$0.needsZXing }))
    }

    func testCheckConfigShowsZXingNames() throws {
        let path = try TestFiles.temporaryDirectory() + "/scangate.conf"
        try TestFiles.write("[decoder]\nsymbologies = qr, datamatrix, EAN-13\n", to: path)
        let r = try ScangateProcess.run(["check-config", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdoutText.contains("\n[decoder]\ndecoder = zxing\nsymbologies = QRCode,EAN13,DataMatrix\n"), r.stdoutText)
    }

    /// Each refusal: exit 2, one line on stderr naming the file, the key and what is allowed.
    func testRefusalsNameTheKeyAndWhatIsAllowed() throws {
        let dir = try TestFiles.temporaryDirectory()
        let cases: [(String, String)] = [
            ("[decoder]\nsymbologies = QRCode, pdf999\n",
             "[decoder] symbologies: 'pdf999' is not a symbology (allowed: all, or any of \(Symbology.cliNames))"),
            ("[decoder]\ndecoder = quagga\n", "[decoder] decoder: 'quagga' is not one of zxing, zbar"),
            ("[decoder]\ndecoder = zbar\nsymbologies = QRCode, DataMatrix, PDF417\n",
             "symbologies: decoder zbar cannot read DataMatrix, PDF417 (use decoder = zxing, or leave them out)"),
            ("[decoder]\nean-addons = yes\nsymbologies = EAN13\n",
             "ean-addons: decoder zxing does not read EAN-2/EAN-5 add-ons (use decoder = zbar with ean-addons)"),
        ]
        for (i, (text, message)) in cases.enumerated() {
            let path = dir + "/c\(i).conf"
            try TestFiles.write(text, to: path)
            let r = try ScangateProcess.run(["check-config", path])
            XCTAssertEqual(r.status, 2, text)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.hasPrefix("scangate check-config: \(path)"), r.stderr)
            XCTAssertTrue(r.stderr.contains(message), "\(r.stderr) lacks \(message)")
        }
        let run = try ScangateProcess.run(["run", "--decoder", "zbar", "--symbologies", "aztec", "--camera", "sim:X", "--oneshot"])
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stderr, "scangate: symbologies: decoder zbar cannot read Aztec (use decoder = zxing, or leave them out)\n")
    }
}

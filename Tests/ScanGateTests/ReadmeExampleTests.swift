import Foundation
import XCTest

/// The README's "Issuing passes from your own server" examples, run as printed with the project's
/// PyJWT and cwt (.build/venv), with a key from `scangate credential keygen` as signing-key.pem; each
/// pass they make must verify with `scangate credential verify` against the JWKS keygen wrote.
final class ReadmeExampleTests: XCTestCase {
    func pythonBlocks() throws -> [String] {
        let readme = try String(contentsOfFile: TestFiles.repositoryRoot + "/README.md", encoding: .utf8)
        guard let section = readme.range(of: "### Issuing passes from your own server"),
              let end = readme.range(of: "### A site without a server", range: section.upperBound..<readme.endIndex) else {
            XCTFail("README has no \"Issuing passes from your own server\" section")
            return []
        }
        let text = readme[section.upperBound..<end.lowerBound]
        return text.components(separatedBy: "```python\n").dropFirst().map { String($0.components(separatedBy: "```")[0]) }
    }

    func testIssuingExamplesRunAndTheirPassesVerify() throws {
        let blocks = try pythonBlocks()
        XCTAssertEqual(blocks.count, 2, "the PyJWT and the cwt example")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/keys", "--kid", "site-2025"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        try FileManager.default.copyItem(atPath: dir + "/keys/site-2025.key", toPath: dir + "/signing-key.pem")
        for (block, variable) in zip(blocks, ["token", "qr_text"]) {
            let script = dir + "/example.py"
            try TestFiles.write(block + "\nprint(\(variable))\n", to: script)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: PythonPeers.python)
            process.arguments = [script]
            process.currentDirectoryURL = URL(fileURLWithPath: dir)
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            guard FileManager.default.isExecutableFile(atPath: PythonPeers.python) else {
                return XCTFail("the Python peers are missing: run scripts/python-env")
            }
            try process.run()
            let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, "\(variable) example: \(errors)")
            let pass = printed.trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(pass.hasPrefix("SG1:"), variable == "qr_text", pass)
            let verified = try ScangateProcess.run(["credential", "verify", pass, "--keys", dir + "/keys/credential-keys.jwks",
                                                    "--aud", "front-door", "--require-synced-clock", "no"])
            XCTAssertEqual(verified.status, 0, "\(variable): \(verified.stdoutText) \(verified.stderr)")
            XCTAssertTrue(verified.stdoutText.contains("number 12345678, kid site-2025"), verified.stdoutText)
            print("README \(variable) example: \(pass.count) characters, verified: \(verified.stdoutLines.first ?? "")")
        }
    }
}

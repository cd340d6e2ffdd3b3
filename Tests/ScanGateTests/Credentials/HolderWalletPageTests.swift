import Core
import Foundation
import XCTest

/// The reference holder page (deploy/wallet) in Debian's headless chromium: its key is made in the browser
/// and cannot be read out, a pass issued to it is shown as a presentation QR code, and a screenshot of the
/// page, replayed to `scangate run`, is accepted; the same screenshot after the window is refused.
final class HolderWalletPageTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Debian's node-qrcode-generator, which the page draws its codes with.
    static let qrcodeJS = "/usr/share/javascript/qrcode-generator/qrcode.js"

    /// Runs Tests/ScanGateTests/Peers/chromium_page.py: the page at `url` in the profile `profile`, once
    /// `ready` holds; a screenshot to `shot`; the value of `eval`.
    func page(_ url: String, profile: String, ready: String, shot: String, eval: String) throws -> JSONValue? {
        let (status, out) = try PythonPeers.run("chromium_page.py", [profile, url, ready, shot, "480", "640", "--eval", eval])
        XCTAssertEqual(status, 0, out)
        return try JSONValue.parse(out.trimmingCharacters(in: .whitespacesAndNewlines))["eval"]
    }

    func testAScreenshotOfTheWalletIsAcceptedOnceAndRefusedAfterTheWindow() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium (scripts/install-deps test)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: Self.qrcodeJS), "Debian's node-qrcode-generator (scripts/install-deps test)")
        let site = dir + "/wallet"
        try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestFiles.repositoryRoot + "/deploy/wallet/index.html", toPath: site + "/index.html")
        // Its contents: Debian's path is a relative symbolic link, which would dangle in a copy.
        try Data(contentsOf: URL(fileURLWithPath: Self.qrcodeJS)).write(to: URL(fileURLWithPath: site + "/qrcode.js"))
        let profile = dir + "/profile"
        let url = "file://" + site + "/index.html"

        // The phone: the page makes its key; the public half is shown, the private half is not extractable.
        let jwk = try XCTUnwrap(page(url, profile: profile, ready: "document.getElementById('holder-jwk').textContent.length > 0",
                                     shot: dir + "/first.png", eval: "document.getElementById('holder-jwk').textContent")?.stringValue)
        let key = try JSONValue.parse(jwk)
        XCTAssertEqual(key["kty"]?.stringValue, "EC")
        XCTAssertEqual(key["crv"]?.stringValue, "P-256")
        XCTAssertNil(key["d"], "the page shows no private key")
        try TestFiles.write(jwk, to: dir + "/holder.jwk")

        // The site issues a pass to that key.
        XCTAssertEqual(try ScangateProcess.run(["credential", "keygen", "--out", dir + "/site-keys", "--kid", "site"]).status, 0)
        let issued = try ScangateProcess.run(["credential", "issue", "--key", dir + "/site-keys/site.key", "--kid", "site",
                                              "--holder-key", dir + "/holder.jwk", "--number", "7001", "--ttl", "30d", "--aud", "north",
                                              "--format", "jwt", "--text"])
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let pass = issued.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)

        // The phone imports it and shows a presentation; the same profile, so the same key.
        let frames = dir + "/frames"
        try FileManager.default.createDirectory(atPath: frames, withIntermediateDirectories: true)
        let extractable = try page(url + "#pass=" + pass + "&aud=north", profile: profile, ready: "document.body.dataset.ready === 'yes'",
                                   shot: frames + "/0001.png",
                                   eval: "holderKey().then(p => String(p.privateKey.extractable))")
        XCTAssertEqual(extractable?.stringValue, "false", "the holder's private key cannot be exported")

        // The kiosk, on the screenshot.
        func kiosk(store: String, launcher: [String] = []) throws -> [JSONValue] {
            let result = try ScangateProcess.run(["run", "--camera", "replay:" + frames, "--credential-format", "any",
                                                  "--credential-keys", dir + "/site-keys/credential-keys.jwks", "--credential-audience", "north",
                                                  "--credential-holder-binding", "require", "--credential-replay-store", store,
                                                  "--no-credential-require-synced-clock"],
                                                 timeout: 60, environment: launcher.isEmpty ? [:] : ["FAKETIME_DONT_FAKE_MONOTONIC": "1"],
                                                 launcher: launcher, executable: launcher.isEmpty ? nil : CredentialTrustTests.fakedClockBinary)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertFalse(result.stdoutText.contains(pass.prefix(40)), "no presentation on stdout")
            return try result.stdoutLines.map { try JSONValue.parse($0) }
        }
        let now = try kiosk(store: dir + "/replay")
        XCTAssertEqual(now.count, 1)
        XCTAssertNil(now.first?["rejected"], "\(now)")
        XCTAssertEqual(now.first?["credential"]?["number"]?.stringValue, "7001")
        XCTAssertEqual(try kiosk(store: dir + "/replay").first?["rejected"]?.stringValue, "presentation-replayed")
        // The same screenshot 40 s later (the kiosk's clock 40 s ahead, a store of its own): past the window.
        let later = try kiosk(store: dir + "/replay-later", launcher: [CredentialTrustTests.faketime, "-f", "+40s"])
        XCTAssertEqual(later.first?["rejected"]?.stringValue, "stale-presentation")
    }
}

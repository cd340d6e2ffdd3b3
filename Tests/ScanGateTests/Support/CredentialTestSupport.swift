import Core
@testable import Credentials
import Foundation
import Platform
import XCTest
import Settings

/// Keys, key files, events and log capture for the credential tests.
enum CredentialFixtures {
    /// A key pair and a key set holding its public half under `kid`.
    static func keyPair(_ algorithm: SignatureAlgorithm, kid: String) throws -> (PrivateKey, CredentialKey) {
        let key = try PrivateKey.generate(algorithm)
        return (key, CredentialKey(keyID: kid, publicKey: try key.publicKey(), source: "test"))
    }

    /// A JWKS file with mode 0644 in `directory` for these keys.
    static func writeJWKS(_ keys: [(String, PrivateKey)], in directory: String, name: String = "keys.jwks") throws -> String {
        let path = directory + "/" + name
        let text = try CredentialKeySet.jwksText(keys.map { ($0.0, try $0.1.publicKey()) })
        try TestFiles.write(text, to: path)
        XCTAssertEqual(chmod(path, 0o644), 0)
        return path
    }

    static func settings(_ format: CredentialFormatSetting = .any, audience: String? = nil) -> CredentialSettings {
        var s = CredentialSettings()
        s.format = format
        s.keys = "/unused"
        s.audience = audience
        return s
    }

    static func event(_ payload: [UInt8]) -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                  symbol: DecodedSymbol(symbology: .qr, data: payload, bounds: Rect(x: 0, y: 0, w: 10, h: 10)),
                  frame: 1, dequeuedAt: .now(), emittedAt: .now())
    }

    static var now: Int64 { WallClock.nowNanoseconds() / 1_000_000_000 }

    /// A hand-made JWS: header and claims as JSON text, signed with `key` (or `signature` as given).
    static func jws(header: String, claims: String, key: PrivateKey?, signature: [UInt8]? = nil) throws -> String {
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(claims.utf8))
        let sig = try signature ?? key?.sign(Array(input.utf8)) ?? []
        return input + "." + Base64.urlEncode(sig)
    }

    /// A hand-made COSE_Sign1 pass: protected and unprotected headers and claims as CBOR values.
    static func cwt(protected: CBORValue?, unprotected: CBORMap = CBORMap(), claims: CBORValue, key: PrivateKey?,
                    tag: UInt64? = 18, signature: [UInt8]? = nil) throws -> String {
        let protectedBytes = protected?.encoded ?? []
        let payload = claims.encoded
        let sig = try signature ?? key?.sign(COSESign1.sigStructure(protected: protectedBytes, payload: payload)) ?? []
        var message = CBORValue.array([.bytes(protectedBytes), .map(unprotected), .bytes(payload), .bytes(sig)])
        if let tag { message = .tagged(tag, message) }
        return COSESign1.prefix + Base45.encode(message.encoded)
    }

    static func map(_ pairs: [(Int64, CBORValue)]) -> CBORValue {
        .map(CBORMap(pairs.map { (CBORValue.int($0.0), $0.1) })!)
    }
}

/// Passes shown to the daemon's simulated camera, one after the other.
enum PassScene {
    /// A `sim:` scenario in `dir` showing each token for 4 frames, then 3 blank ones; returns its path.
    static func write(_ tokens: [String], in dir: String, size: Int = 320, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        var text = "size \(size)x\(size)\nfps 30\nbackground 255\nframes \(tokens.count * 7 + 3)\n"
        for (n, token) in tokens.enumerated() {
            XCTAssertFalse(token.contains("\"") || token.contains("\\"), "a token the scenario cannot quote", file: file, line: line)
            text += "code qr \"\(token)\" frames \(n * 7)-\(n * 7 + 3) module 3\n"
        }
        let path = dir + "/passes-\(UUID().uuidString.prefix(8)).scenario"
        try TestFiles.write(text, to: path)
        return path
    }
}

/// The project's Python peers (.build/venv, made by scripts/python-env from Tests/python-requirements.txt).
enum PythonPeers {
    static var python: String { TestFiles.repositoryRoot + "/.build/venv/bin/python" }
    static var directory: String { TestFiles.repositoryRoot + "/Tests/ScanGateTests/Peers" }

    /// Runs a peer script; fails the test (never skips) when the venv is missing.
    static func run(_ script: String, _ args: [String], file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, stdout: String) {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            XCTFail("the Python peers are missing: run scripts/python-env (installs PyJWT, cryptography and cwt from Tests/python-requirements.txt into .build/venv)", file: file, line: line)
            throw NSError(domain: "PythonPeers", code: 1)
        }
        let result = try TestProcess.run(python, [directory + "/" + script] + args, file: file, line: line)
        if result.status != 0 && result.status != 1 {
            XCTFail("\(script) \(args.prefix(1)): exit \(result.status): \(result.stderr)", file: file, line: line)
        }
        return (result.status, result.stdoutText)
    }

    struct Case: Decodable {
        let name: String
        let token: String
        let expect: String
        let number: String?
    }

    struct Cases: Decodable {
        let jwks: String
        let cases: [Case]
    }

    static func cases(_ script: String, in directory: String) throws -> Cases {
        let result = try run(script, ["cases", directory])
        return try JSONDecoder().decode(Cases.self, from: Data(result.stdout.utf8))
    }
}

import Foundation
import XCTest
@testable import Core
@testable import OSDP
import Platform

/// The secure channel against vectors computed by an independent implementation
/// (Tests/ScanGateTests/Peers/osdp_sc_vectors.py: the spec's formulas with PyPI `cryptography`).
final class OSDPSecureChannelTests: XCTestCase {
    struct Vectors {
        let json: [String: Any]
        func hex(_ key: String) -> [UInt8] { OSDPTest.bytes(json[key] as? String ?? "") }
        var exchanges: [(note: String, command: [UInt8], reply: [UInt8])] {
            (json["exchanges"] as? [[String: String]] ?? []).map {
                ($0["note"] ?? "", OSDPTest.bytes($0["command"] ?? ""), OSDPTest.bytes($0["reply"] ?? ""))
            }
        }
    }

    static var fixturePath: String { TestFiles.repositoryRoot + "/Tests/ScanGateTests/Fixtures/osdp-sc-vectors.json" }

    func vectors() throws -> Vectors {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.fixturePath))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return Vectors(json: json)
    }

    func testTheFixtureIsWhatTheIndependentScriptPrints() throws {
        let python = PythonPeers.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("the test peers are not installed: run scripts/python-env (makes .build/venv from Tests/python-requirements.txt)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [PythonPeers.directory + "/osdp_sc_vectors.py"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let printed = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(String(decoding: printed, as: UTF8.self),
                       try String(contentsOfFile: Self.fixturePath, encoding: .utf8),
                       "regenerate with: .build/venv/bin/python Tests/ScanGateTests/Peers/osdp_sc_vectors.py > \(Self.fixturePath)")
    }

    func testSessionKeysCryptogramsAndInitialMACMatchTheVectors() throws {
        let v = try vectors()
        let crypto = OSDPSecureChannelCrypto(aes: try AES128())
        let scbk = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let keys = try crypto.sessionKeys(scbk: scbk, rndA: v.hex("rnd_a"))
        XCTAssertEqual(keys.encryption.bytes, v.hex("s_enc"), "S-ENC")
        XCTAssertEqual(keys.mac1.bytes, v.hex("s_mac1"), "S-MAC1")
        XCTAssertEqual(keys.mac2.bytes, v.hex("s_mac2"), "S-MAC2")
        XCTAssertEqual(try crypto.clientCryptogram(keys, rndA: v.hex("rnd_a"), rndB: v.hex("rnd_b")), v.hex("client_cryptogram"))
        let server = try crypto.serverCryptogram(keys, rndA: v.hex("rnd_a"), rndB: v.hex("rnd_b"))
        XCTAssertEqual(server, v.hex("server_cryptogram"))
        XCTAssertEqual(try crypto.initialReplyMAC(keys, serverCryptogram: server), v.hex("rmac_i"), "RMAC-I")
        XCTAssertEqual(OSDPTest.identity.clientUID, v.hex("cuid"))
    }

    func testEncryptionRoundTripsAndRejectsBadPadding() throws {
        let crypto = OSDPSecureChannelCrypto(aes: try AES128())
        let keys = try crypto.sessionKeys(scbk: .installDefault, rndA: [1, 2, 3, 4, 5, 6, 7, 8])
        let iv = [UInt8](repeating: 0x5A, count: 16)
        for length in [0, 1, 15, 16, 17, 64] {
            let data = (0..<length).map { UInt8($0) }
            let sealed = try crypto.encrypt(keys, chained: iv, data: data)
            XCTAssertEqual(sealed.count, (length / 16 + 1) * 16, "padding always adds the 0x80 marker")
            XCTAssertEqual(try crypto.decrypt(keys, chained: iv, data: sealed), data)
        }
        // A block whose plain text does not end in 0x80 00..: refused, not a crash.
        let raw = try AES128().encryptCBC([UInt8](repeating: 0x11, count: 16), key: keys.encryption, iv: iv.map { ~$0 })
        XCTAssertNil(try crypto.decrypt(keys, chained: iv, data: raw))
        XCTAssertNil(try crypto.decrypt(keys, chained: iv, data: [1, 2, 3]), "not whole blocks")
        XCTAssertNil(try crypto.decrypt(keys, chained: iv, data: []))
    }

    /// The whole scripted session, fed to the state machine with RND.B injected: every reply byte for byte.
    func testThePDAnswersTheScriptedSessionByteForByte() throws {
        let v = try vectors()
        let key = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let store = MemoryOSDPStore()
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 5, secure: .required, key: key),
                                         store: store, random: v.hex("rnd_b"))
        var effects: [OSDPEffect] = []
        for (index, exchange) in v.exchanges.enumerated() {
            if exchange.note.contains("RAW") {
                _ = pd.enqueue(.raw(seq: 42, bytes: v.hex("card"), emittedAt: OSDPTest.at(Double(index))))
            }
            let steps = pd.receive(exchange.command, at: OSDPTest.at(Double(index)))
            XCTAssertEqual(steps.count, 1, exchange.note)
            XCTAssertEqual(OSDPTest.hex(steps.first?.reply), Hex.string(exchange.reply), exchange.note)
            effects += steps.flatMap(\.effects)
        }
        XCTAssertTrue(effects.contains(.secureChannel(active: true, detail: "up")))
        XCTAssertTrue(effects.contains(.readSent(seq: 42)))
        let led = LEDCommand(temporary: .show(LEDBlink(onColor: .green, offColor: .off, onMs: 500, offMs: 500), for: .milliseconds(3000)),
                             permanent: LEDBlink(onColor: .red, offColor: .red, onMs: 100, offMs: 0))
        XCTAssertTrue(effects.contains(.feedback(FeedbackCommand(led: led))), "\(effects)")
        XCTAssertTrue(effects.contains(.secureChannel(active: false, detail: "dropped: a command with a wrong MAC")))
        XCTAssertFalse(pd.isSecureChannelActive)
    }

    /// A retry (same sequence number, same bytes) inside the channel gets the cached reply without the
    /// MAC chain moving on, so the exchange after it still verifies.
    func testARetryInsideTheChannelResendsTheCachedReplyAndKeepsTheChain() throws {
        let v = try vectors()
        let key = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 5, secure: .required, key: key), random: v.hex("rnd_b"))
        let ex = v.exchanges
        for i in 0..<3 { XCTAssertEqual(OSDPTest.hex(pd.receive(ex[i].command, at: OSDPTest.t0).first?.reply), Hex.string(ex[i].reply)) }
        // The LED command, twice: the same reply, one feedback effect only.
        let first = pd.receive(ex[3].command, at: OSDPTest.t0)
        let again = pd.receive(ex[3].command, at: OSDPTest.t0)
        XCTAssertEqual(first.first?.reply, again.first?.reply)
        XCTAssertEqual(Hex.string(again.first?.reply ?? []), Hex.string(ex[3].reply))
        XCTAssertEqual(first.flatMap(\.effects).filter { if case .feedback = $0 { return true } else { return false } }.count, 1)
        XCTAssertTrue(again.flatMap(\.effects).isEmpty, "a retry acts on nothing: \(again)")
        // The chain did not move: the next scripted command still verifies.
        _ = pd.enqueue(.raw(seq: 1, bytes: v.hex("card"), emittedAt: OSDPTest.t0))
        XCTAssertEqual(OSDPTest.hex(pd.receive(ex[4].command, at: OSDPTest.t0).first?.reply), Hex.string(ex[4].reply))
    }

    /// Install mode: a panel enrols a PD that has no key (SCBK-D session, KEYSET), byte for byte, and
    /// the key reaches the store before the ACK; afterwards SCBK-D is refused.
    func testInstallModeKeysetByteForByte() throws {
        let v = try vectors()
        let store = MemoryOSDPStore()
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 0, secure: .required, key: nil, installMode: true),
                                         store: store, random: v.hex("rnd_b"))
        let exchanges = (v.json["install_exchanges"] as? [[String: String]] ?? []).map {
            ($0["note"] ?? "", OSDPTest.bytes($0["command"] ?? ""), OSDPTest.bytes($0["reply"] ?? ""))
        }
        XCTAssertEqual(exchanges.count, 9)
        var effects: [OSDPEffect] = []
        for (note, command, reply) in exchanges {
            let steps = pd.receive(command, at: OSDPTest.t0)
            XCTAssertEqual(OSDPTest.hex(steps.first?.reply), Hex.string(reply), note)
            effects += steps.flatMap(\.effects)
            if note.hasPrefix("KEYSET") {
                XCTAssertEqual(store.keys.first?.0.bytes, v.hex("install_new_key"), "stored while answering the KEYSET")
                XCTAssertFalse(pd.installMode)
            }
        }
        XCTAssertEqual(store.keys.count, 1)
        XCTAssertEqual(store.keys.first?.1, try pd.keyCheckValue(XCTUnwrap(OSDPKey(bytes: v.hex("install_new_key")))))
        XCTAssertTrue(effects.contains(.keyInstalled))
        XCTAssertTrue(effects.contains(.secureChannel(active: true, detail: "up with SCBK-D (install mode)")))
        XCTAssertTrue(effects.contains(.secureChannel(active: true, detail: "up")))
    }

    /// Issue 23: the panel's KEYSET when the key file is written but the state file cannot be (a full
    /// disk). The reader uses the new key from then on, after a restart too (the key file decides), so the
    /// panel must hear ACK and switch with it: a NAK would leave the two on different keys after a restart.
    func testAKeysetWhoseStateFileFailsIsAckedAndTheKeyFileHoldsTheNewKey() throws {
        let v = try vectors()
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keyPath = dir + "/scbk"
        let store = OSDPFileStore(keyPath: keyPath, statePath: dir + "/gone/state", state: OSDPPersistedState())
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 0, secure: .required, key: nil, installMode: true),
                                         store: store, logger: logs.logger, random: v.hex("rnd_b"))
        var keysetAnswered = false
        for (note, command, reply) in exchanges(v, "install_exchanges") {
            XCTAssertEqual(OSDPTest.hex(pd.receive(command, at: OSDPTest.t0).first?.reply), Hex.string(reply), note)
            if note.hasPrefix("KEYSET") { keysetAnswered = true }
        }
        XCTAssertTrue(keysetAnswered)
        let newKey = try XCTUnwrap(OSDPKey(bytes: v.hex("install_new_key")))
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath), newKey, "what the reader loads after a restart")
        XCTAssertEqual(pd.configuration.key, newKey)
        XCTAssertTrue(logs.contains("osdp: KEYSET: the key is stored in \(keyPath), but recording its check value failed: osdp-state-file \(dir)/gone/state"),
                      "\(logs.all)")
    }

    func exchanges(_ v: Vectors, _ name: String) -> [(note: String, command: [UInt8], reply: [UInt8])] {
        (v.json[name] as? [[String: String]] ?? []).map {
            ($0["note"] ?? "", OSDPTest.bytes($0["command"] ?? ""), OSDPTest.bytes($0["reply"] ?? ""))
        }
    }

    /// Issue 19 item 5: inside the channel, a KEYSET whose key is in clear with only a MAC (SCS_15) is
    /// NAK 06 and the key is kept; so is any command carrying data in clear (LED, KEEPACTIVE); a POLL with
    /// SCS_15 (no data) is answered, the channel stays up, and an encrypted KEYSET (SCS_17) still works.
    func testDataInClearInsideTheChannelIsNAK06AndAKeysetInClearKeepsTheKey() throws {
        let v = try vectors()
        let key = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let store = MemoryOSDPStore()
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 5, secure: .required, key: key),
                                         store: store, logger: logs.logger, random: v.hex("rnd_b"))
        let script = exchanges(v, "scs15_exchanges")
        XCTAssertEqual(script.count, 7)
        for (note, command, reply) in script {
            let steps = pd.receive(command, at: OSDPTest.t0)
            XCTAssertEqual(steps.count, 1, note)
            XCTAssertEqual(OSDPTest.hex(steps.first?.reply), Hex.string(reply), note)
            let effects = steps.flatMap(\.effects)
            if note.contains("(SCS_15) -> NAK 06") || note.contains("in clear") {
                XCTAssertEqual(Array(reply[6...8]), [0x02, 0x18, 0x41], "a NAK inside the channel (after the mark): \(note)")
                XCTAssertTrue(store.keys.isEmpty, "nothing stored: \(note)")
                XCTAssertEqual(pd.configuration.key, key, "the key is kept: \(note)")
                XCTAssertFalse(effects.contains { if case .feedback = $0 { return true } else { return false } }, "not acted on: \(note)")
                XCTAssertFalse(effects.contains(.keyInstalled), note)
                XCTAssertTrue(pd.isSecureChannelActive, "the channel stays up: \(note)")
            }
        }
        XCTAssertTrue(logs.contains("KEYSET with the new key in clear (SCS_15, MAC only) refused with NAK 06"), "\(logs.all)")
        XCTAssertFalse(logs.all.joined().contains(v.json["scs15_attacker_key"] as? String ?? "-"), "the key is never logged")
        XCTAssertEqual(store.keys.map { Hex.string($0.0.bytes) }, [v.json["scs15_rotated_key"] as? String ?? "?"],
                       "only the encrypted KEYSET changed the key")
    }

    /// Issue 19 item 4: install mode left on while a key is installed: a device that opens the channel with
    /// SCBK-D is NAK 06 at the CHLNG, and neither its SCRYPT nor its KEYSET gets anywhere.
    func testInstallModeWithAKeyInstalledRefusesSCBKDAndTheTakeover() throws {
        let v = try vectors()
        let key = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let store = MemoryOSDPStore()
        let logs = LogCapture(repeatInterval: 0)
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 0, secure: .required, key: key, installMode: true),
                                         store: store, logger: logs.logger, random: v.hex("rnd_b"))
        let script = exchanges(v, "takeover_exchanges")
        XCTAssertEqual(script.count, 4)
        var effects: [OSDPEffect] = []
        for (note, command, reply) in script {
            let steps = pd.receive(command, at: OSDPTest.t0)
            XCTAssertEqual(OSDPTest.hex(steps.first?.reply), Hex.string(reply), note)
            effects += steps.flatMap(\.effects)
        }
        XCTAssertTrue(store.keys.isEmpty)
        XCTAssertEqual(pd.configuration.key, key)
        XCTAssertFalse(pd.isSecureChannelActive)
        XCTAssertFalse(effects.contains { if case .secureChannel(active: true, _) = $0 { return true } else { return false } }, "\(effects)")
        XCTAssertTrue(logs.contains("a CHLNG for the default key SCBK-D was refused with NAK 06: a key is installed, so install mode is over"), "\(logs.all)")
        // The real key still opens the channel (the first exchanges of the main session, at address 5).
        let real = try OSDPTest.peripheral(OSDPTest.configuration(address: 5, secure: .required, key: key, installMode: true),
                                           random: v.hex("rnd_b"))
        for exchange in v.exchanges.prefix(3) {
            XCTAssertEqual(OSDPTest.hex(real.receive(exchange.command, at: OSDPTest.t0).first?.reply), Hex.string(exchange.reply), exchange.note)
        }
        XCTAssertTrue(real.isSecureChannelActive)
    }

    func testKeysetThatCannotBeSavedIsRefusedAndTheOldKeyStays() throws {
        let v = try vectors()
        let store = MemoryOSDPStore()
        store.failing = true
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 0, secure: .required, key: nil, installMode: true),
                                         store: store, random: v.hex("rnd_b"))
        let exchanges = (v.json["install_exchanges"] as? [[String: String]] ?? []).map {
            (OSDPTest.bytes($0["command"] ?? ""), OSDPTest.bytes($0["reply"] ?? ""))
        }
        for i in 0...4 { _ = pd.receive(exchanges[i].0, at: OSDPTest.t0) }
        let reply = try XCTUnwrap(pd.receive(exchanges[5].0, at: OSDPTest.t0).first?.reply)
        // A NAK inside the channel (SCS_18: its data is encrypted), not the ACK.
        XCTAssertEqual(Array(reply[6...8]), [0x02, 0x18, 0x41])
        XCTAssertNotEqual(reply, exchanges[5].1)
        XCTAssertTrue(pd.installMode, "install mode goes on until a key is saved")
        XCTAssertTrue(pd.isSecureChannelActive)
    }

    func testChallengeForTheDefaultKeyOutsideInstallModeIsRefused() throws {
        let v = try vectors()
        let key = try XCTUnwrap(OSDPKey(bytes: v.hex("scbk")))
        let pd = try OSDPTest.peripheral(OSDPTest.configuration(address: 5, secure: .required, key: key))
        // CHLNG with key selector 0 (SCBK-D): 53 05 13 00 0C 03 11 00 76 RND.A crc.
        let chlng = OSDPFrameBuilder.build(address: 5, sequence: 0, crc: true, securityBlock: [3, 0x11, 0], code: 0x76,
                                           data: v.hex("rnd_a"))
        let reply = pd.receive(chlng, at: OSDPTest.t0).first?.reply
        XCTAssertEqual(OSDPTest.hex(reply), "53850900044106" + Hex.string(OSDPCheck.field(OSDPTest.bytes("53850900044106"), crc: true)))
    }

    func testChallengeWithoutAnyKeyOutsideInstallModeIsRefusedAndInstallModeTakesSCBKD() throws {
        let rndA = OSDPTest.bytes("B0B1B2B3B4B5B6B7")
        let chlng1 = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, securityBlock: [3, 0x11, 1], code: 0x76, data: rndA)
        let chlng0 = OSDPFrameBuilder.build(address: 0, sequence: 0, crc: true, securityBlock: [3, 0x11, 0], code: 0x76, data: rndA)
        let noKey = try OSDPTest.peripheral(OSDPTest.configuration(secure: .optional, key: nil, installMode: true))
        XCTAssertEqual(OSDPTest.hex(noKey.receive(chlng1, at: OSDPTest.t0).first?.reply), "53800900044106C0D4", "no SCBK installed: NAK 06")
        let reply = try XCTUnwrap(noKey.receive(chlng0, at: OSDPTest.t0).first?.reply)
        XCTAssertEqual(reply[5...7], [3, 0x12, 0], "CCRYPT echoes key selector 0 in its security block")
        XCTAssertEqual(reply[8], 0x76)
    }
}

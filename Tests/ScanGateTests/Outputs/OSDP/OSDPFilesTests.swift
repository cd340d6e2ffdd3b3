#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
@testable import Core
@testable import OSDP
import Components
import Platform
import Settings

/// The key file's checks, the atomic writes, the state file, and how start-up combines them.
final class OSDPFilesTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func writeKey(_ text: String, mode: mode_t = 0o600, name: String = "scbk") throws -> String {
        let path = dir + "/" + name
        try TestFiles.write(text, to: path)
        XCTAssertEqual(chmod(path, mode), 0)
        return path
    }

    func error<T>(_ body: () throws -> T) -> String {
        do {
            _ = try body()
            return "no error"
        } catch let error as UsageError {
            return error.message
        } catch {
            return "unexpected \(error)"
        }
    }

    func testAKeyFileIsReadWhenItIsPrivate() throws {
        let path = try writeKey("00112233445566778899aabbccddeeff\n")
        XCTAssertEqual(try OSDPFiles.loadKey(path)?.bytes, OSDPTest.bytes("00112233445566778899AABBCCDDEEFF"))
        XCTAssertNil(try OSDPFiles.loadKey(dir + "/missing"), "a missing file is no key, not an error")
    }

    func testAKeyFileOthersCanReadIsRefusedWithTheFix() throws {
        let path = try writeKey("00112233445566778899aabbccddeeff", mode: 0o644)
        XCTAssertEqual(error { try OSDPFiles.loadKey(path) },
                       "osdp-scbk-file \(path): mode 0644 lets group or others read the key; run: chmod 600 \(path)")
    }

    func testAKeyFileOwnedBySomeoneElseIsRefused() throws {
        let path = try writeKey("00112233445566778899aabbccddeeff")
        XCTAssertEqual(geteuid(), 0, "this check needs root to give the file away (the test machine runs as root)")
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        let message = error { try OSDPFiles.loadKey(path) }
        XCTAssertEqual(message, "osdp-scbk-file \(path): owned by nobody (uid 65534), but ScanGate runs as root (uid 0); run: chown root \(path)")
    }

    func testASymbolicLinkAndBadContentAreRefused() throws {
        let real = try writeKey("00112233445566778899aabbccddeeff")
        let link = dir + "/link"
        XCTAssertEqual(symlink(real, link), 0)
        XCTAssertEqual(error { try OSDPFiles.loadKey(link) },
                       "osdp-scbk-file \(link): is a symbolic link; point osdp-scbk-file at the key file itself")
        for text in ["0011", "00112233445566778899aabbccddeeff00", "zz112233445566778899aabbccddeeff", ""] {
            let path = try writeKey(text, name: "bad")
            XCTAssertEqual(error { try OSDPFiles.loadKey(path) },
                           "osdp-scbk-file \(path): must hold the 16-byte key as 32 hex digits (e.g. made with: openssl rand -hex 16)", text)
        }
    }

    func testKeysetWritesTheKeyAtomicallyAndPrivately() throws {
        let keyPath = dir + "/scbk", statePath = dir + "/state"
        _ = try writeKey("00112233445566778899aabbccddeeff")
        let store = OSDPFileStore(keyPath: keyPath, statePath: statePath, state: OSDPPersistedState(address: 3, baud: 19200))
        let key = try XCTUnwrap(OSDPKey(bytes: Array(0xA0...0xAF)))
        try store.installKey(key, check: [1, 2, 3])
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath), key, "readable by the same checks the daemon uses at start")
        var info = stat()
        XCTAssertEqual(stat(keyPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["scbk", "state"], "no temporary file left")
        XCTAssertEqual(try OSDPPersistedState.load(statePath),
                       OSDPPersistedState(address: 3, baud: 19200, installedKeyCheck: [1, 2, 3]), "the state kept what it had")
    }

    func testAFailedWriteLeavesTheOldFileWhole() throws {
        let keyPath = dir + "/scbk"
        _ = try writeKey("00112233445566778899aabbccddeeff")
        // A directory that is not empty in the temporary file's place makes the write fail before the rename.
        let (directory, name) = OSDPFiles.split(keyPath)
        let temporary = "\(directory)/.\(name).tmp-\(getpid())"
        XCTAssertEqual(mkdir(temporary, 0o700), 0)
        try TestFiles.write("junk", to: temporary + "/inside")
        let store = OSDPFileStore(keyPath: keyPath, statePath: dir + "/state", state: OSDPPersistedState())
        XCTAssertThrowsError(try store.installKey(XCTUnwrap(OSDPKey(bytes: Array(0xA0...0xAF))), check: [1, 2, 3])) { error in
            XCTAssertTrue("\(error)".contains(temporary), "the error names the file: \(error)")
        }
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath)?.bytes, OSDPTest.bytes("00112233445566778899AABBCCDDEEFF"))
    }

    /// Issue 23: a power cut between creating `.NAME.tmp-PID` and the rename leaves that file, and after
    /// the reboot the daemon often has the same pid. It must not make every later KEYSET and COMSET fail.
    func testATemporaryFileLeftByAPowerCutDoesNotBlockTheNextWrite() throws {
        let keyPath = dir + "/scbk", statePath = dir + "/state"
        _ = try writeKey("00112233445566778899aabbccddeeff")
        try TestFiles.write("0011", to: "\(dir)/.scbk.tmp-\(getpid())")
        try TestFiles.write("address=1\n", to: "\(dir)/.state.tmp-\(getpid())")
        let store = OSDPFileStore(keyPath: keyPath, statePath: statePath, state: OSDPPersistedState())
        let key = try XCTUnwrap(OSDPKey(bytes: Array(0xA0...0xAF)))
        XCTAssertNil(try store.installKey(key, check: [1, 2, 3]))
        try store.storeLink(address: 9, baud: 38400)
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath), key)
        XCTAssertEqual(try OSDPPersistedState.load(statePath), OSDPPersistedState(address: 9, baud: 38400, installedKeyCheck: [1, 2, 3]))
        var info = stat()
        XCTAssertEqual(stat(keyPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "the key is still private")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["scbk", "state"], "no temporary file left")
    }

    /// A symbolic link planted in the temporary file's place is removed, never followed: its target keeps
    /// its content, and the key file is a regular file of mode 0600.
    func testASymbolicLinkPlantedAsTheTemporaryFileIsNotFollowed() throws {
        let keyPath = dir + "/scbk"
        let victim = dir + "/victim"
        try TestFiles.write("victim's own text", to: victim)
        XCTAssertEqual(chmod(victim, 0o644), 0)
        XCTAssertEqual(symlink(victim, "\(dir)/.scbk.tmp-\(getpid())"), 0)
        let store = OSDPFileStore(keyPath: keyPath, statePath: dir + "/state", state: OSDPPersistedState())
        let key = try XCTUnwrap(OSDPKey(bytes: Array(0xA0...0xAF)))
        XCTAssertNil(try store.installKey(key, check: [1, 2, 3]))
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "victim's own text")
        var info = stat()
        XCTAssertEqual(stat(victim, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath), key, "a regular file (loadKey refuses a link), mode 0600")
    }

    /// At start the temporary files of dead processes are removed; one whose process runs is left alone.
    func testStaleTemporaryFilesOfDeadProcessesAreRemovedAtStart() throws {
        let keyPath = dir + "/scbk"
        let deadPID: pid_t = 2_000_000_000  // above any pid_max: no such process
        XCTAssertEqual(kill(deadPID, 0), -1)
        let dead = "\(dir)/.scbk.tmp-\(deadPID)", mine = "\(dir)/.scbk.tmp-\(getpid())"
        let running = "\(dir)/.scbk.tmp-1", other = "\(dir)/.scbk.tmp-junk", state = "\(dir)/.state.tmp-\(deadPID)"
        for file in [dead, mine, running, other, state] { try TestFiles.write("x", to: file) }
        XCTAssertEqual(try OSDPFiles.removeStaleTemporaries(of: keyPath).sorted(), [dead, mine].sorted())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(),
                       [".scbk.tmp-1", ".scbk.tmp-junk", ".state.tmp-\(deadPID)"], "pid 1 runs; not a pid; another file's")
    }

    /// Issue 23: a KEYSET whose state file cannot be written (a full disk) after the key file was. The
    /// key file decides the key after a restart, so the KEYSET has taken effect: the store says what was
    /// not recorded instead of failing, and the state keeps the check value for its next write.
    func testAKeyStoredWhileTheStateFileCannotBeWrittenIsInstalled() throws {
        let keyPath = dir + "/scbk", statePath = dir + "/no-such-directory/state"
        _ = try writeKey("00112233445566778899aabbccddeeff")
        let store = OSDPFileStore(keyPath: keyPath, statePath: statePath, state: OSDPPersistedState(address: 3))
        let key = try XCTUnwrap(OSDPKey(bytes: Array(0xA0...0xAF)))
        let problem = try store.installKey(key, check: [1, 2, 3])
        XCTAssertTrue(problem?.contains("recording its check value failed: osdp-state-file \(statePath)") ?? false, "\(problem ?? "nil")")
        XCTAssertEqual(try OSDPFiles.loadKey(keyPath), key, "the key a restart uses is the one the panel was told")
        XCTAssertEqual(mkdir(dir + "/no-such-directory", 0o755), 0)
        try store.storeLink(address: 4, baud: 9600)
        XCTAssertEqual(try OSDPPersistedState.load(statePath), OSDPPersistedState(address: 4, baud: 9600, installedKeyCheck: [1, 2, 3]))
    }

    func testTheStateFileRoundTripsAndBadLinesNameTheFileAndLine() throws {
        let path = dir + "/state"
        let state = OSDPPersistedState(address: 126, baud: 230400, installedKeyCheck: [0xAB, 0xCD, 0xEF])
        try OSDPFiles.writeAtomically(Array(state.text.utf8), to: path, mode: 0o644)
        XCTAssertEqual(try OSDPPersistedState.load(path), state)
        XCTAssertNil(try OSDPPersistedState.load(dir + "/none"))
        try TestFiles.write("# comment\naddress=127\n", to: path)
        XCTAssertEqual(error { try OSDPPersistedState.load(path) },
                       "osdp-state-file \(path) line 2: address must be 0 to 126 (delete the file to start from the configuration)")
        try TestFiles.write("baud=2400\n", to: path)
        XCTAssertTrue(error { try OSDPPersistedState.load(path) }.contains("line 1: baud must be one of 9600, 19200, 38400, 57600, 115200, 230400"))
        try TestFiles.write("colour=red\n", to: path)
        XCTAssertTrue(error { try OSDPPersistedState.load(path) }.contains("unknown key 'colour'"))
    }

    /// A FIFO (no writer) or a device in the key's or the state file's place is refused at once, never
    /// waited on; an oversize state file is refused with the limit.
    func testAFIFOOrADeviceOrAHugeFileIsRefusedWithoutBlocking() throws {
        let fifo = dir + "/scbk-fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertTrue(error { try OSDPFiles.loadKey(fifo) }.contains("not a regular file"), error { try OSDPFiles.loadKey(fifo) })
        let stateFifo = dir + "/state-fifo"
        XCTAssertEqual(mkfifo(stateFifo, 0o600), 0)
        XCTAssertTrue(error { try OSDPPersistedState.load(stateFifo) }.contains("not a regular file"),
                      error { try OSDPPersistedState.load(stateFifo) })
        XCTAssertTrue(error { try OSDPPersistedState.load("/dev/zero") }.contains("not a regular file"))
        let big = dir + "/state-big"
        try TestFiles.write(String(repeating: "#\n", count: 4000), to: big)
        XCTAssertTrue(error { try OSDPPersistedState.load(big) }.contains("OSDP state files are limited to 4 KB"),
                      error { try OSDPPersistedState.load(big) })
    }

    // MARK: - Start-up

    func settings() -> OSDPSettings {
        var s = OSDPSettings()
        s.device = "/dev/null"
        s.vendorCode = 0x0A0B0C
        s.scbkFile = dir + "/scbk"
        s.stateFile = dir + "/state"
        s.serial = 7
        return s
    }

    func testRequiredSecureChannelWithoutAKeyIsAnErrorThatSaysWhatToDo() throws {
        let s = settings()
        XCTAssertEqual(error { try OSDPStartup.resolve(s, features: OSDPTest.features) },
                       "osdp-scbk-file \(dir)/scbk: does not exist; osdp-secure = required needs the panel's key there (32 hex digits, chmod 600, owned by the service user), or set osdp-install-mode = yes to let the panel install one")
        var install = s
        install.installMode = true
        let startup = try OSDPStartup.resolve(install, features: OSDPTest.features)
        XCTAssertTrue(startup.configuration.installMode)
        XCTAssertNil(startup.configuration.key)
    }

    func testTheStateFileOverridesAddressAndBaud() throws {
        var s = settings()
        s.secure = .off
        try TestFiles.write("address=5\nbaud=38400\n", to: s.stateFile)
        let startup = try OSDPStartup.resolve(s, features: OSDPTest.features)
        XCTAssertEqual(startup.configuration.address, 5)
        XCTAssertEqual(startup.configuration.baud, 38400)
        XCTAssertEqual(startup.notes.count, 2)
    }

    func testInstallModeIsNotEnteredAgainForTheKeyAPanelInstalled() throws {
        var s = settings()
        s.installMode = true
        let keyPath = try writeKey("00112233445566778899aabbccddeeff")
        let key = try XCTUnwrap(try OSDPFiles.loadKey(keyPath))
        let check = Array(try AES128().encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3))
        try TestFiles.write("installed-key-check=\(Hex.string(check))\n", to: s.stateFile)
        let startup = try OSDPStartup.resolve(s, features: OSDPTest.features)
        XCTAssertFalse(startup.configuration.installMode)
        XCTAssertEqual(startup.configuration.key, key)
        XCTAssertTrue(startup.notes.first?.contains("delete that file to enrol the reader again") ?? false, "\(startup.notes)")
        XCTAssertEqual(startup.installMode, .inert(keyCheck: check, recorded: true))
        XCTAssertEqual(startup.warnings, [])
    }

    /// Issue 19 item 4: a key file is proof enough that a key is installed. Install mode left on with a key
    /// there (put by hand, or its state file lost) is inert: SCBK-D stays refused.
    func testInstallModeIsInertWheneverAKeyFileIsThere() throws {
        var s = settings()
        s.installMode = true
        let keyPath = try writeKey("00112233445566778899aabbccddeeff")
        let key = try XCTUnwrap(try OSDPFiles.loadKey(keyPath))
        let check = Array(try AES128().encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3))
        for state in [nil, "installed-key-check=000000\n", "address=0\n"] {
            if let state { try TestFiles.write(state, to: s.stateFile) } else { unlink(s.stateFile) }
            let startup = try OSDPStartup.resolve(s, features: OSDPTest.features)
            XCTAssertFalse(startup.configuration.installMode, "state file: \(state ?? "none")")
            XCTAssertEqual(startup.configuration.key, key)
            XCTAssertEqual(startup.installMode, .inert(keyCheck: check, recorded: false))
            XCTAssertEqual(startup.notes.first, "osdp-install-mode = yes is not used: \(keyPath) holds a key (check value \(Hex.string(check))); the default key SCBK-D is refused while a key is installed; delete that file to enrol the reader again")
            XCTAssertFalse(startup.notes.joined().contains("00112233"), "never the key itself")
        }
    }

    /// The state file's record of an installed key without the key file: start-up fails closed, naming
    /// both files, instead of reopening install mode (or falling back to plain text).
    func testARecordedKeyWhoseFileIsGoneFailsClosed() throws {
        for (secure, installMode) in [(OSDPSecureMode.required, true), (.optional, true), (.optional, false), (.required, false)] {
            var s = settings()
            s.secure = secure
            s.installMode = installMode
            try TestFiles.write("installed-key-check=A1B2C3\n", to: s.stateFile)
            XCTAssertEqual(error { try OSDPStartup.resolve(s, features: OSDPTest.features) },
                           "osdp-scbk-file \(dir)/scbk: does not exist, but osdp-state-file \(dir)/state records that a panel installed a key (check value A1B2C3); the reader does not fall back to install mode or plain text: restore the key file, or to enrol the reader again delete the installed-key-check line from \(dir)/state",
                           "\(secure) install mode \(installMode)")
        }
    }

    func testOpenInstallModeAndOptionalModeAreWarnings() throws {
        var s = settings()
        s.installMode = true
        let open = try OSDPStartup.resolve(s, features: OSDPTest.features)
        XCTAssertEqual(open.installMode, .open)
        XCTAssertTrue(open.configuration.installMode)
        XCTAssertEqual(open.warnings, ["osdp: install mode is open: no key in \(dir)/scbk yet, so the first device on the bus to open the secure channel with the default key SCBK-D and send KEYSET owns the reader; it ends for good with that KEYSET"])
        s.installMode = false
        s.secure = .optional
        let optional = try OSDPStartup.resolve(s, features: OSDPTest.features)
        XCTAssertEqual(optional.installMode, .off)
        XCTAssertEqual(optional.warnings, ["osdp: osdp-secure = optional: any device on the bus may talk to the reader in plain text: a plain-text COMSET moves it to another address and speed (kept across restarts) and plain-text POLLs receive the card reads; set osdp-secure = required once the panel uses the secure channel"])
        s.secure = .off
        XCTAssertEqual(try OSDPStartup.resolve(s, features: OSDPTest.features).warnings, [], "off is plain by design, and says so in PDCAP")
    }

    /// Doctor's rows for the security settings: optional mode and an open install mode are WARN rows that
    /// say what is given up; an inert install mode passes and says why; a lost key file fails.
    func testDoctorSaysWhatOptionalAndInstallModeGiveUp() throws {
        var run = RunSettings()
        run.osdp = settings()
        XCTAssertEqual(OSDPOutput.securityRows(run, firmware: [0, 0, 0]), [], "required, no install mode: nothing to say")
        run.osdp.secure = .optional
        run.osdp.installMode = true
        var rows = OSDPOutput.securityRows(run, firmware: [0, 0, 0])
        XCTAssertEqual(rows.map(\.check), ["osdp secure mode", "osdp install mode"])
        XCTAssertEqual(rows.map(\.result), [.warn, .warn])
        XCTAssertTrue(rows[0].detail.contains("plain-text COMSET") && rows[0].detail.contains("plain-text POLLs"), rows[0].detail)
        XCTAssertEqual(rows[0].fix, "set osdp-secure = required once the panel uses the secure channel")
        XCTAssertTrue(rows[1].detail.hasPrefix("open: no key in \(dir)/scbk yet"), rows[1].detail)
        let table = DoctorReport(rows: rows).table
        XCTAssertTrue(table.contains("osdp secure mode   WARN    plain text allowed"), table)
        XCTAssertTrue(table.hasSuffix("0 passed, 0 failed, 2 warnings"), table)
        XCTAssertEqual(DoctorReport(rows: rows).exitCode, 0, "a warning is not a failure")

        let keyPath = try writeKey("00112233445566778899aabbccddeeff")
        run.osdp.secure = .required
        rows = OSDPOutput.securityRows(run, firmware: [0, 0, 0])
        XCTAssertEqual(rows.map(\.result), [.pass])
        let key = try XCTUnwrap(try OSDPFiles.loadKey(keyPath))
        let check = Hex.string(Array(try AES128().encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3)))
        XCTAssertEqual(rows.first?.detail, "on but inert: \(keyPath) holds a key (check value \(check)), so the default key SCBK-D is refused; set osdp-install-mode = no")

        unlink(keyPath)
        try TestFiles.write("installed-key-check=\(check)\n", to: run.osdp.stateFile)
        rows = OSDPOutput.securityRows(run, firmware: [0, 0, 0])
        XCTAssertEqual(rows.map(\.result), [.fail])
        XCTAssertTrue(rows.first?.detail.contains("records that a panel installed a key") ?? false, "\(rows)")
    }

    func testTheDefaultSerialIsAHashOfTheMachineID() throws {
        let path = dir + "/machine-id"
        try TestFiles.write("0123456789abcdef0123456789abcdef\n", to: path)
        let serial = try OSDPIdentity.serial(fromMachineID: path)
        XCTAssertEqual(serial, try OSDPIdentity.serial(fromMachineID: path), "stable")
        XCTAssertNotEqual(serial, 0x01234567, "not the machine ID itself")
        try TestFiles.write("not an id", to: path)
        XCTAssertTrue(error { try OSDPIdentity.serial(fromMachineID: path) }.contains("set osdp-serial"))
        XCTAssertNoThrow(try OSDPIdentity.serial(fromMachineID: "/etc/machine-id"))
    }
}

/// `OSDPSettings.validate()`: each error names the option and what is allowed.
final class OSDPSettingsTests: XCTestCase {
    func message(_ change: (inout OSDPSettings) -> Void) -> String {
        var s = OSDPSettings()
        s.device = "/dev/ttyUSB0"
        s.vendorCode = 0x0A0B0C
        change(&s)
        do throws(UsageError) {
            try s.validate()
            return "valid"
        } catch {
            return error.message
        }
    }

    func testDefaultsAreValidAndOSDPOffNeedsNothing() {
        XCTAssertEqual(message { _ in }, "valid")
        var off = OSDPSettings()
        off.address = 500
        XCTAssertNoThrow(try off.validate(), "no device: OSDP is off and its options are not looked at")
        let d = OSDPSettings()
        XCTAssertEqual(d.address, 0)
        XCTAssertEqual(d.baud, 9600)
        XCTAssertEqual(d.secure, .required)
        XCTAssertEqual(d.maxCardBytes, 64)
        XCTAssertEqual(d.offlineAfterMs, 8000)
        XCTAssertEqual(d.cardFormat, .raw)
    }

    /// Issue 24: a zero vendor code (the old default) is refused with where an OUI comes from; the input
    /// lines need a chip and one line each.
    func testAZeroVendorCodeAndUnplacedInputsAreRefused() {
        let zero = message { $0.vendorCode = 0 }
        XCTAssertTrue(zero.hasPrefix("osdp-vendor-code: 0 (unset) is not a vendor's OUI"), zero)
        XCTAssertTrue(zero.contains("IEEE OUI") && zero.contains("0x0A0B0C"), "says how to get one and which to use for tests: \(zero)")
        XCTAssertEqual(message { $0.tamperLine = .offset(5) },
                       "osdp-tamper-line needs a GPIO chip: set osdp-input-chip or gpio-chip (a label such as pinctrl-rp1, a name such as gpiochip0, or a path)")
        XCTAssertEqual(message { $0.tamperLine = .offset(5); $0.doorContactLine = .offset(5); $0.inputChip = "gpiochip0" },
                       "osdp-tamper-line and door-contact-line both name line 5: give each input its own line")
        XCTAssertEqual(message { $0.inputDebounceMs = 5000 }, "osdp-input-debounce-ms: 5000 is out of range (0 to 1000)")
        XCTAssertEqual(message { $0.powerLine = .name("GPIO13"); $0.inputChip = "gpiochip0" }, "valid")
    }

    /// The Raspberry Pi under-voltage flag: found by the hwmon device's name, read as 0 or 1; absent where
    /// no rpi_volt device exists.
    func testTheUndervoltageFlagIsFoundByNameAndRead() throws {
        let root = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        XCTAssertNil(OSDPUndervoltageFlag.find(root: root), "no hwmon devices")
        XCTAssertNil(OSDPUndervoltageFlag.find(root: root + "/missing"))
        for (dir, name) in [("hwmon0", "cpu_thermal"), ("hwmon1", "rpi_volt")] {
            try FileManager.default.createDirectory(atPath: root + "/" + dir, withIntermediateDirectories: true)
            try TestFiles.write(name + "\n", to: root + "/" + dir + "/name")
        }
        let flag = try XCTUnwrap(OSDPUndervoltageFlag.find(root: root))
        XCTAssertEqual(flag.path, root + "/hwmon1/in0_lcrit_alarm")
        guard case .failure = flag.read() else { return XCTFail("no alarm file yet: an error") }
        try TestFiles.write("0\n", to: flag.path)
        XCTAssertEqual(try flag.read().get(), false)
        try TestFiles.write("1\n", to: flag.path)
        XCTAssertEqual(try flag.read().get(), true)
    }

    func testEachBadValueNamesItsOption() {
        XCTAssertEqual(message { $0.address = 127 }, "osdp-address: 127 is not an OSDP address (0 to 126; 127 is the broadcast address)")
        XCTAssertEqual(message { $0.baud = 4800 }, "osdp-baud: 4800 is not an OSDP speed (9600, 19200, 38400, 57600, 115200, 230400)")
        XCTAssertEqual(message { $0.installMode = true; $0.secure = .off },
                       "osdp-install-mode = yes needs the secure channel: set osdp-secure = required or optional")
        XCTAssertEqual(message { $0.maxCardBytes = 0 },
                       "osdp-max-card-bytes: 0 is out of range (1 to 1000; 64 is what libosdp's panel accepts)")
        XCTAssertEqual(message { $0.vendorCode = 0x1000000 }, "osdp-vendor-code: 16777216 does not fit 24 bits (1 to 16777215, 0xFFFFFF)")
        XCTAssertEqual(message { $0.model = 256 }, "osdp-model: 256 is out of range (0 to 255)")
        XCTAssertEqual(message { $0.ttlMs = 50 }, "osdp-ttl-ms: 50 is out of range (100 to 600000)")
        XCTAssertEqual(message { $0.offlineAfterMs = 10 },
                       "osdp-offline-after-ms: 10 is out of range (1000 to 600000; the spec's value is 8000)")
        XCTAssertEqual(message { $0.stateFile = $0.scbkFile },
                       "osdp-state-file and osdp-scbk-file are both /var/lib/scangate/osdp-scbk: give them different paths")
        XCTAssertEqual(message { $0.device = "" }, "osdp: the device path is empty (use e.g. /dev/ttyUSB0 or /dev/serial/by-id/...)")
    }
}

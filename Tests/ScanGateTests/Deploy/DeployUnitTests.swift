#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Settings

/// deploy/scangate.service, checked by systemd's own tools (systemd is installed by scripts/install-deps deb;
/// a missing tool fails these tests, it never skips them).
final class DeployUnitTests: XCTestCase {
    private let root = ConfigTestFiles.repositoryRoot
    private let analyze = "/usr/bin/systemd-analyze"

    private func requireAnalyze() throws {
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            throw DeployToolMissing(message: "\(analyze) is missing: run scripts/install-deps deb")
        }
    }

    private func unitLines() throws -> [(key: String, value: String)] {
        try ConfigTestFiles.read(root + "/deploy/scangate.service").split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix("["), let eq = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<eq]), String(line[line.index(after: eq)...]))
        }
    }

    private func values(_ key: String) throws -> [String] { try unitLines().filter { $0.key == key }.map(\.value) }

    func testSystemdAnalyzeVerifyIsClean() throws {
        try requireAnalyze()
        let dir = try TestFiles.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/man/man1", withIntermediateDirectories: true)
        // The unit as installed, except that ExecStart points at a stand-in for /usr/bin/scangate.
        ConfigTestFiles.write("#!/bin/sh\n", to: dir + "/scangate")
        chmod(dir + "/scangate", 0o755)
        let unit = try ConfigTestFiles.read(root + "/deploy/scangate.service")
            .replacingOccurrences(of: "/usr/bin/scangate", with: dir + "/scangate")
        ConfigTestFiles.write(unit, to: dir + "/scangate.service")
        // Documentation=man:scangate(1) is checked against the package's man page.
        try FileManager.default.copyItem(atPath: root + "/deploy/debian/scangate.1", toPath: dir + "/man/man1/scangate.1")
        var env = ProcessInfo.processInfo.environment
        env["MANPATH"] = dir + "/man"
        let result = try ConfigTestFiles.run(analyze, ["verify", dir + "/scangate.service"], environment: env)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "", "systemd-analyze verify warns")
        XCTAssertEqual(result.stdout, "")
    }

    func testSecurityExposureIsAtMost2() throws {
        try requireAnalyze()
        let result = try ConfigTestFiles.run(analyze, ["security", "--offline=yes", "--no-pager",
                                                       root + "/deploy/scangate.service"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let marker = "Overall exposure level for scangate.service: "
        let line = try XCTUnwrap(result.stdout.split(separator: "\n").first { $0.contains(marker) }, result.stdout)
        let figure = try XCTUnwrap(Double(line.components(separatedBy: marker)[1].split(separator: " ")[0]))
        XCTAssertLessThanOrEqual(figure, 2.0, "systemd-analyze security exposure \(figure) > 2.0:\n\(result.stdout)")
        print("systemd-analyze security exposure: \(figure)")
    }

    /// The unit with the [mqtt] network drop-in merged in (a repeated [Service] section is how systemd reads
    /// a drop-in): still verifies clean, has IPv4/IPv6 sockets, allows only localhost, and stays well hardened.
    func testTheMQTTNetworkDropInVerifiesAndAllowsOnlyTheBroker() throws {
        try requireAnalyze()
        let dir = try TestFiles.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/man/man1", withIntermediateDirectories: true)
        ConfigTestFiles.write("#!/bin/sh\n", to: dir + "/scangate")
        chmod(dir + "/scangate", 0o755)
        let dropIn = try ConfigTestFiles.read(root + "/deploy/dropins/mqtt-network.conf")
        let unit = try ConfigTestFiles.read(root + "/deploy/scangate.service")
            .replacingOccurrences(of: "/usr/bin/scangate", with: dir + "/scangate") + "\n" + dropIn
        ConfigTestFiles.write(unit, to: dir + "/scangate.service")
        try FileManager.default.copyItem(atPath: root + "/deploy/debian/scangate.1", toPath: dir + "/man/man1/scangate.1")
        var env = ProcessInfo.processInfo.environment
        env["MANPATH"] = dir + "/man"
        let verify = try ConfigTestFiles.run(analyze, ["verify", dir + "/scangate.service"], environment: env)
        XCTAssertEqual(verify.status, 0, verify.stderr)
        XCTAssertEqual(verify.stderr, "", "systemd-analyze verify warns")
        let active = dropIn.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }
        XCTAssertEqual(active, ["PrivateNetwork=no", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "IPAddressAllow=localhost"])
        let security = try ConfigTestFiles.run(analyze, ["security", "--offline=yes", "--no-pager", dir + "/scangate.service"])
        XCTAssertEqual(security.status, 0, security.stderr)
        XCTAssertTrue(security.stdout.contains("IPAddressDeny="), security.stdout)
        let marker = "Overall exposure level for scangate.service: "
        let line = try XCTUnwrap(security.stdout.split(separator: "\n").first { $0.contains(marker) }, security.stdout)
        let figure = try XCTUnwrap(Double(line.components(separatedBy: marker)[1].split(separator: " ")[0]))
        XCTAssertLessThanOrEqual(figure, 2.5, "with the network drop-in: exposure \(figure)\n\(security.stdout)")
        print("systemd-analyze security exposure with the MQTT network drop-in: \(figure)")
    }

    /// MemoryMax= and TasksMax= in bytes and tasks, from the unit.
    private func ceilings() throws -> (memory: Int, tasks: Int) {
        let memory = try XCTUnwrap(try values("MemoryMax").first, "no MemoryMax= in the unit")
        let multipliers: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        let bytes: Int
        if let unit = memory.last, let multiplier = multipliers[unit] {
            bytes = try XCTUnwrap(Int(memory.dropLast()), memory) * multiplier
        } else {
            bytes = try XCTUnwrap(Int(memory), memory)
        }
        let tasks = try XCTUnwrap(try values("TasksMax").first.flatMap { Int($0) }, "no TasksMax= (a number) in the unit")
        return (bytes, tasks)
    }

    func testResourceCeilingsAreSet() throws {
        XCTAssertEqual(try values("MemoryMax"), ["256M"])
        XCTAssertEqual(try values("MemorySwapMax"), ["0"])
        XCTAssertEqual(try values("TasksMax"), ["64"])
        let (memory, tasks) = try ceilings()
        // Room on a 512 MB Raspberry Pi Zero 2 for the rest of the kiosk; several times bench's 25 MB target.
        XCTAssertLessThanOrEqual(memory, 512 << 20)
        XCTAssertGreaterThanOrEqual(memory, 4 * 25 << 20)
        XCTAssertLessThanOrEqual(tasks, 256)
    }

    /// The ceilings against the daemon itself: `scangate run` with every device configured (the simulated
    /// camera, a serial line, GPIO LEDs and buzzer (no chip here: retried), the beep on ALSA's null
    /// device, JSON on stdout) reading codes as fast as it can. Its peak RSS (VmHWM) must be at most a
    /// quarter of MemoryMax=, and its threads at most a third of TasksMax= (the door outputs add some).
    func testCeilingsAreAFewTimesTheMeasuredNeed() throws {
        let (memory, tasks) = try ceilings()
        let pty = try PseudoTerminal()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = ["run", "--camera", "sim:CEILING", "--fast", "--loop", "--hold-off-ms", "100",
                             "--symbologies", "qr,ean13,code128,databar", "--serial", pty.name,
                             "--gpio-chip", "gpiochip0", "--led-green", "17", "--led-red", "18", "--status-led", "19",
                             "--buzzer", "20", "--beep", "default", "--beep-device", "null", "--log-level", "error"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        let pid = process.processIdentifier
        defer { if process.isRunning { kill(pid, SIGKILL) } }
        var peakKiB = 0, threads = 0, events = 0, buffered = Data()
        // Sampled at each event, while every part of the daemon is at work.
        while events < 8 {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffered.append(chunk)
            while let newline = buffered.firstIndex(of: 0x0A) {
                buffered.removeSubrange(...newline)
                events += 1
                let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                for line in status.split(separator: "\n") {
                    let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard parts.count == 2 else { continue }
                    if parts[0] == "VmHWM", let kib = Int(parts[1].split(separator: " ")[0]) { peakKiB = max(peakKiB, kib) }
                    if parts[0] == "Threads", let n = Int(parts[1]) { threads = max(threads, n) }
                }
            }
        }
        XCTAssertEqual(events, 8, "the daemon ended before 8 events")
        kill(pid, SIGTERM)
        XCTAssertEqual(done.wait(timeout: .now() + 20), .success, "did not stop within 20 s of SIGTERM")
        print("scangate run, every device: peak RSS \(peakKiB / 1024) MiB (MemoryMax \(memory >> 20) MiB\(Self.sanitizerBuild ? ", sanitizer build" : "")), "
              + "\(threads) threads (TasksMax \(tasks))")
        XCTAssertGreaterThan(peakKiB, 0)
        // A sanitizer build's shadow memory and quarantine are not the daemon's need: there the whole
        // ceiling must hold; the quarter is checked on the plain build (make test-unit and make test).
        let sanitized = Self.sanitizerBuild
        XCTAssertLessThanOrEqual((sanitized ? 1 : 4) * peakKiB * 1024, memory,
                                 "peak RSS \(peakKiB) KiB is more than \(sanitized ? "MemoryMax= (sanitizer build)" : "a quarter of MemoryMax=")")
        XCTAssertGreaterThan(threads, 0)
        XCTAssertLessThanOrEqual(3 * threads, tasks, "\(threads) threads is more than a third of TasksMax=")
    }

    /// The tests and the binary they run come from one build; the sanitizer runtimes export their init.
    static var sanitizerBuild: Bool {
        guard let handle = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(handle) }
        return dlsym(handle, "__asan_init") != nil || dlsym(handle, "__tsan_init") != nil
    }

    func testServiceIsANotifyServiceWithAWatchdog() throws {
        XCTAssertEqual(try values("Type"), ["notify"])
        XCTAssertEqual(try values("Restart"), ["on-failure"])
        let watchdog = try XCTUnwrap(try values("WatchdogSec").first.flatMap { Int($0) })
        XCTAssertGreaterThanOrEqual(watchdog, 10)
        XCTAssertEqual(try values("ExecStart"), ["/usr/bin/scangate run --config /etc/scangate/scangate.conf"])
        XCTAssertEqual(try values("ExecReload"), ["/bin/kill -HUP $MAINPID"])
        XCTAssertEqual(try values("WantedBy"), ["multi-user.target"])
    }

    func testRunsAsScangateWithExactlyItsDevices() throws {
        XCTAssertEqual(try values("User"), ["scangate"])
        XCTAssertEqual(Set(try values("SupplementaryGroups").flatMap { $0.split(separator: " ").map(String.init) }),
                       ["video", "gpio", "dialout", "audio"])
        XCTAssertEqual(try values("DevicePolicy"), ["closed"])
        // Names as the kernel lists them in /proc/devices.
        XCTAssertEqual(Set(try values("DeviceAllow")),
                       ["char-video4linux rw", "char-gpiochip rw", "char-ttyS rw", "char-ttyUSB rw", "char-ttyACM rw",
                        "char-ttyAMA rw", "char-alsa rw"])
    }

    /// The OSDP key and state files default to /var/lib/scangate, which the unit makes (StateDirectory=)
    /// owned by the service user and writable under ProtectSystem=strict: a KEYSET or COMSET can be saved.
    func testTheOSDPKeyAndStateFilesAreInTheUnitsStateDirectory() throws {
        XCTAssertEqual(try values("StateDirectory"), ["scangate scangate/metrics"])
        // Others may pass through (to metrics/scangate.prom) but not list; the key file itself must be 0600
        // (the OSDP output refuses anything group or others can read).
        XCTAssertEqual(try values("StateDirectoryMode"), ["0711"])
        XCTAssertEqual(try values("RuntimeDirectory"), ["scangate"])
        XCTAssertEqual(try values("ProtectSystem"), ["strict"])
        let defaults = OSDPSettings()
        for path in [defaults.scbkFile, defaults.stateFile] {
            XCTAssertTrue(path.hasPrefix("/var/lib/scangate/"), "\(path) is outside the unit's StateDirectory")
        }
    }

    func testHardening() throws {
        let expected: [String: String] = [
            "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
            "RestrictAddressFamilies": "AF_UNIX", "CapabilityBoundingSet": "", "PrivateNetwork": "yes",
            "MemoryDenyWriteExecute": "yes",
        ]
        for (key, value) in expected {
            XCTAssertEqual(try values(key), [value], key)
        }
        XCTAssertEqual(try values("SystemCallFilter").first, "@system-service")
    }

    /// The one-time pass store lives in the unit's StateDirectory (the only writable place under /var/lib
    /// with ProtectSystem=strict), and the clock check can read adjtimex(2): systemd's own analysis of the
    /// unit's final system-call set allows adjtimex, while nothing in the unit can set the clock
    /// (no capabilities at all, so any adjtimex mode bit is EPERM; the other @clock calls stay filtered).
    func testReplayStoreDirectoryAndTheClockCheck() throws {
        try requireAnalyze()
        XCTAssertTrue(try values("StateDirectory").first?.split(separator: " ").contains("scangate") ?? false)
        XCTAssertTrue(CredentialSettings().replayStore.hasPrefix("/var/lib/scangate/"), "the default store is not in StateDirectory")
        XCTAssertEqual(try values("ProtectClock"), [], "ProtectClock=yes filters adjtimex even read-only")
        XCTAssertEqual(try values("CapabilityBoundingSet"), [""])
        let filters = try values("SystemCallFilter")
        XCTAssertTrue(filters.contains("adjtimex"), "\(filters)")
        XCTAssertTrue(filters.contains { $0.hasPrefix("~") && $0.contains("@privileged") }, "\(filters)")
        let result = try ConfigTestFiles.run(analyze, ["security", "--offline=yes", "--no-pager", root + "/deploy/scangate.service"])
        let clock = try XCTUnwrap(result.stdout.split(separator: "\n").first { $0.contains("SystemCallFilter=~@clock") }, result.stdout)
        XCTAssertTrue(clock.contains("adjtimex is allowed"), String(clock))
    }
}

/// A tool the deploy checks need is not installed: the test fails (it never skips).
struct DeployToolMissing: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

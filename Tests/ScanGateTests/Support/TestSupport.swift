import Foundation
import XCTest
import Core

/// Temporary files for tests.
enum TestFiles {
    /// A new empty directory (0700) for the running test, removed with everything in it when that test
    /// ends (see `TemporaryFolders`).
    static func temporaryDirectory() throws -> String {
        try makeDirectory(template: try TemporaryFolders.run.get().path + "/test-XXXXXX")
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func write(bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The repository root: the nearest folder above this file that holds Package.swift (so moving the
    /// test files between folders cannot break it).
    static var repositoryRoot: String {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder.path
    }
}

/// Runs the built `scangate` binary as users do, with a deadline.
enum ScangateProcess {
    typealias Result = TestProcess.Result

    static var binary: String {
        // The scangate built with these tests (same --build-path: .build, .build-tsan, .build-asan, ...):
        // it sits next to the test executable.
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let sibling = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("scangate").path
            if FileManager.default.isExecutableFile(atPath: sibling) { return sibling }
        }
        let root = TestFiles.repositoryRoot
        for candidate in [".build/debug/scangate", ".build/x86_64-unknown-linux-gnu/debug/scangate", ".build/release/scangate"] {
            let path = root + "/" + candidate
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return root + "/.build/debug/scangate"
    }

    /// Runs `scangate args...`; fails the test if it does not end within `timeout` seconds.
    /// `environment` adds to (or replaces) this process's variables; `stdin` is written to its standard input;
    /// `launcher` runs scangate through another program (`["/usr/bin/faketime", "-f", "+2d"]`), and
    /// `executable` is another scangate build than `binary`.
    static func run(_ args: [String], timeout: TimeInterval = 60, environment: [String: String] = [:], stdin: String? = nil,
                    launcher: [String] = [], executable: String? = nil,
                    file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let scangate = executable ?? binary
        return try TestProcess.run(launcher.first ?? scangate, launcher.isEmpty ? args : Array(launcher.dropFirst()) + [scangate] + args,
                                   timeout: timeout, environment: environment, stdin: stdin, file: file, line: line)
    }
}

/// Runs a program as a test's child process and collects what it wrote, with a deadline.
enum TestProcess {
    struct Result {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stdoutLines: [String] { stdoutText.split(separator: "\n").map(String.init) }
    }

    /// Runs `executable arguments...`; fails the test (and ends the program) if it does not end within
    /// `timeout` seconds. `environment` adds to (or replaces) this process's variables; `stdin` is written to
    /// its standard input (otherwise it reads /dev/null).
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 60, environment: [String: String] = [:],
                    stdin: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input: Pipe? = stdin == nil ? nil : Pipe()
        process.standardInput = input ?? FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        if let stdin, let input {
            let bytes = Data(stdin.utf8)
            DispatchQueue.global().async {
                try? input.fileHandleForWriting.write(contentsOf: bytes)
                try? input.fileHandleForWriting.close()
            }
        }
        // Read both pipes while the process runs so a full pipe cannot block it.
        let collected = PosixMutex<(Data, Data)>((Data(), Data()))
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let d = out.fileHandleForReading.readDataToEndOfFile()
            collected.withLock { $0.0 = d }
        }
        DispatchQueue.global().async(group: group) {
            let d = err.fileHandleForReading.readDataToEndOfFile()
            collected.withLock { $0.1 = d }
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            let name = URL(fileURLWithPath: executable).lastPathComponent
            XCTFail("\(name) \(arguments.joined(separator: " ")) did not finish within \(timeout) s", file: file, line: line)
            _ = done.wait(timeout: .now() + 5)
        }
        group.wait()
        // Foundation does not close a Pipe's descriptors when the Pipe goes: closed here, or each run would
        // leave two behind (a long test run then passes FD_SETSIZE, where libmosquitto's select() fails).
        for handle in [out.fileHandleForReading, out.fileHandleForWriting, err.fileHandleForReading, err.fileHandleForWriting]
            + (input.map { [$0.fileHandleForReading] } ?? []) {
            try? handle.close()
        }
        let (outData, errData) = collected.withLock { $0 }
        return Result(status: process.terminationStatus, stdout: Array(outData), stderr: String(decoding: errData, as: UTF8.self))
    }
}

extension FrameSource {
    /// The next frame with a token nobody stops: for tests that pull frames one by one.
    func nextFrame() throws -> Frame? { try nextFrame(until: StopToken()) }
}

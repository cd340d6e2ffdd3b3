import Core
import Dispatch
import Foundation
import XCTest

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
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        if let stdin {
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
        let (outData, errData) = collected.withLock { $0 }
        return Result(status: process.terminationStatus, stdout: Array(outData), stderr: String(decoding: errData, as: UTF8.self))
    }
}

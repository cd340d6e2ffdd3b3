import Foundation

/// File helpers for the Config*/Deploy* tests (Foundation is fine in tests).
enum ConfigTestFiles {
    static func write(_ text: String, to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    static func removeTree(_ path: String) throws {
        try FileManager.default.removeItem(atPath: path)
    }

    /// The repository root (the worktree this test file is in).
    static var repositoryRoot: String { TestFiles.repositoryRoot }

    /// Runs a program, returning exit status, stdout and stderr.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    currentDirectory: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        // Output goes to files, so a chatty child can never block on a full pipe.
        let base = NSTemporaryDirectory() + "scangate-run-\(UUID().uuidString)"
        write("", to: base + ".out")
        write("", to: base + ".err")
        defer { try? FileManager.default.removeItem(atPath: base + ".out"); try? FileManager.default.removeItem(atPath: base + ".err") }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        let outData = try Data(contentsOf: URL(fileURLWithPath: base + ".out"))
        let errData = try Data(contentsOf: URL(fileURLWithPath: base + ".err"))
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

import Foundation

/// File helpers for the Config*/Deploy* tests (Foundation is fine in tests).
enum ConfigTestFiles {
    static func write(_ text: String, to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The repository root (the worktree this test file is in).
    static var repositoryRoot: String { TestFiles.repositoryRoot }

    /// Runs a program, returning exit status, stdout and stderr (a build or an install in a chroot may take
    /// minutes: the deadline is 10).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try TestProcess.run(executable, arguments, timeout: 600, environment: environment, file: file, line: line)
        return (result.status, result.stdoutText, result.stderr)
    }
}

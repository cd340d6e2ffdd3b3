#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Whole-file reads and writes for image files, with errors that name the file.
public enum FileBytes {
    /// Every byte of `path`. Throws UsageError "cannot read PATH: reason".
    public static func read(path: String) throws(UsageError) -> [UInt8] {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY) {
        case .success(let opened): fd = opened
        case .failure(let e): throw UsageError("cannot read \(path): \(e)")
        }
        let owner = OwnedFileDescriptor(fd)
        defer { owner.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let result = chunk.withUnsafeMutableBytes { fd.read(into: $0) }
            switch result {
            case .success(0): return bytes
            case .success(let n): bytes.append(contentsOf: chunk[0..<n])
            case .failure(let e): throw UsageError("cannot read \(path): \(e)")
            }
        }
    }

    /// Creates or replaces `path` with `bytes`. Throws UsageError "cannot write PATH: reason".
    public static func write(_ bytes: [UInt8], to path: String) throws(UsageError) {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644) {
        case .success(let opened): fd = opened
        case .failure(let e): throw UsageError("cannot write \(path): \(e)")
        }
        let owner = OwnedFileDescriptor(fd)
        defer { owner.close() }
        if case .failure(let e) = fd.writeAll(bytes) { throw UsageError("cannot write \(path): \(e)") }
    }
}

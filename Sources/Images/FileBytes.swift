#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Whole-file reads and writes for image files, with errors that name the file.
public enum FileBytes {
    /// Every byte of the regular file `path`, at most `limit.bytes` (see `BoundedFile`: FIFOs, devices,
    /// sockets and folders are refused without blocking, and the size is checked before and while reading).
    /// Throws UsageError "cannot read PATH: reason".
    public static func read(path: String, limit: FileSizeLimit) throws(UsageError) -> [UInt8] {
        do {
            return try BoundedFile.readAll(path: path, limit: limit)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// A small data file (make-code --data-file): at most `FileSizeLimit.dataFile`.
    public static func read(path: String) throws(UsageError) -> [UInt8] {
        try read(path: path, limit: .dataFile)
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

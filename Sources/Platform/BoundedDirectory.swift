#if canImport(Glibc)
import Glibc
#endif

/// How many entries ScanGate reads from one kind of folder, and the plural name the error uses
/// ("replay folders are limited to 100000").
public struct DirectoryLimit: Sendable, Equatable {
    public let entries: Int
    /// Plural, as in "replay folders".
    public let kind: String

    public init(entries: Int, kind: String) {
        precondition(entries >= 0)
        self.entries = entries
        self.kind = kind
    }

    /// `replay:DIR`: 100000 frames are 1 h 51 min at 15 fps; every entry counts, frames or not.
    public static let replay = DirectoryLimit(entries: 100_000, kind: "replay folders")
    /// `decode-image --corpus DIR`: the sample folders and each folder's files.
    public static let corpus = DirectoryLimit(entries: 100_000, kind: "corpus folders")
}

/// A folder opened for listing, within an entry limit. One owner of its `DIR` stream (closed by `close()`
/// or when the object goes away). Opening never blocks: O_DIRECTORY makes a FIFO, a device or a regular
/// file fail with ENOTDIR before anything is opened. Entry kinds are looked up relative to the open
/// folder (fstatat), following symbolic links, so they describe what a later open of the entry reaches.
public final class BoundedDirectory: @unchecked Sendable {
    public let path: String
    private var stream: OpaquePointer?

    private init(path: String, stream: OpaquePointer) {
        self.path = path
        self.stream = stream
    }

    public static func open(_ path: String) throws(BoundedFileError) -> BoundedDirectory {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK) {
        case .success(let opened): fd = opened
        case .failure(let e):
            if e.rawValue == ENOTDIR, case .success(let kind) = BoundedFile.kind(of: path), kind != .directory {
                throw BoundedFileError(path: path, reason: .notDirectory(kind))
            }
            throw BoundedFileError(path: path, reason: .system(operation: "open", e))
        }
        guard let stream = fdopendir(fd.rawValue) else {
            let e = Errno.current
            _ = fd.close()
            throw BoundedFileError(path: path, reason: .system(operation: "fdopendir", e))
        }
        return BoundedDirectory(path: path, stream: stream)
    }

    /// The entry names (without "." and ".."), in the order the file system gives them. Throws when the
    /// folder holds more than `limit.entries` entries (every entry counts, whatever its name or kind).
    public func names(limit: DirectoryLimit) throws(BoundedFileError) -> [String] {
        guard let stream else { throw BoundedFileError(path: path, reason: .system(operation: "readdir", Errno(rawValue: EBADF))) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw BoundedFileError(path: path, reason: .system(operation: "readdir", .current)) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            guard names.count < limit.entries else {
                throw BoundedFileError(path: path, reason: .tooManyEntries(limit: limit))
            }
            names.append(name)
        }
    }

    /// What `name` in this folder is, following symbolic links (a dangling link fails with ENOENT).
    public func kind(of name: String) -> Result<FileKind, Errno> {
        guard let stream else { return .failure(Errno(rawValue: EBADF)) }
        var info = stat()
        return fstatat(dirfd(stream), name, &info, 0) == 0 ? .success(FileKind(mode: info.st_mode)) : .failure(.current)
    }

    public func close() {
        if let stream { closedir(stream) }
        stream = nil
    }

    deinit { close() }

    /// The entry names of `path`, at most `limit.entries`.
    public static func names(_ path: String, limit: DirectoryLimit) throws(BoundedFileError) -> [String] {
        let directory = try open(path)
        defer { directory.close() }
        return try directory.names(limit: limit)
    }
}

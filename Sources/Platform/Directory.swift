#if canImport(Glibc)
import Glibc
#endif

/// Directory listings, written once: the entries of a directory (without "." and ".."), sorted by name.
public enum Directory {
    /// True when `path` is a directory (or a symbolic link to one).
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// The names in `path`, sorted; an unreadable directory is an error naming it.
    public static func entries(_ path: String) throws(SystemError) -> [String] {
        guard let dir = opendir(path) else { throw SystemError("opendir", path, Errno.current) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// fsync(2) of the directory `path`, so the names created, renamed or removed in it are durable. The one
    /// directory sync: every durable file (AtomicFile, RecordLog, the spool's segments) goes through it.
    public static func sync(_ path: String, retryOnInterrupt retry: Bool = true) throws(SystemError) {
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY).get("open directory", path)
        defer { _ = fd.close() }
        try fd.sync(retryOnInterrupt: retry).get("fsync directory", path)
    }

    /// `sync` of the directory holding `path`.
    public static func syncParent(of path: String) throws(SystemError) {
        try sync(FilePath.parent(of: path))
    }

    /// How many entries `path` has (nil when it cannot be read): open descriptors in /proc/PID/fd.
    public static func count(_ path: String) -> Int? {
        (try? entries(path))?.count
    }
}

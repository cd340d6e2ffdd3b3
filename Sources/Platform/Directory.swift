#if canImport(Glibc)
import Glibc
#endif

/// Directory listings, written once: the entries of a directory (without "." and ".."), sorted by name.
public enum Directory {
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

    /// How many entries `path` has (nil when it cannot be read): open descriptors in /proc/PID/fd.
    public static func count(_ path: String) -> Int? {
        (try? entries(path))?.count
    }
}

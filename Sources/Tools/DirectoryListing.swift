#if canImport(Glibc)
import Glibc
#endif
import Platform

/// The entry names of one directory (no "." and ".."), sorted by byte order; throws with errno.
func directoryEntries(_ path: String) throws(SystemError) -> [String] {
    guard let dir = opendir(path) else { throw SystemError("opendir", path, Errno.current) }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
}

/// True when `path` is a directory.
func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

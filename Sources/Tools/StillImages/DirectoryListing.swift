#if canImport(Glibc)
import Glibc
#endif
import Platform

/// The entry names of one directory (no "." and ".."), sorted by byte order; at most `limit` entries
/// (more is an error). Opening never blocks (see `BoundedDirectory`).
func directoryEntries(_ path: String, limit: DirectoryLimit = .corpus) throws(BoundedFileError) -> [String] {
    try BoundedDirectory.names(path, limit: limit).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
}

/// True when `path` is a directory.
func isDirectory(_ path: String) -> Bool { Directory.isDirectory(path) }

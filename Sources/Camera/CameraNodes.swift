#if canImport(Glibc)
import Glibc
#endif

/// Finds V4L2 nodes on the filesystem: /dev/videoN and the stable names udev links to them.
public enum CameraNodes {
    /// `directory`/videoN paths in numeric order (video2 before video10).
    public static func videoNodes(in directory: String = "/dev") -> [String] {
        entries(of: directory)
            .compactMap { name -> (Int, String)? in
                guard name.hasPrefix("video"), let n = Int(name.dropFirst(5)) else { return nil }
                return (n, directory + "/" + name)
            }
            .sorted { $0.0 < $1.0 }
            .map(\.1)
    }

    /// The links in `directory` (default /dev/v4l/by-id) that resolve to `node`, sorted; none when the
    /// directory does not exist.
    public static func links(to node: String, in directory: String = "/dev/v4l/by-id") -> [String] {
        guard let target = resolve(node) else { return [] }
        return entries(of: directory).sorted()
            .map { directory + "/" + $0 }
            .filter { resolve($0) == target }
    }

    /// realpath(3), or nil when the path does not resolve.
    static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The names in a directory (without . and ..); none when it cannot be read.
    static func entries(of directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

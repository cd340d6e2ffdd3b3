#if canImport(Glibc)
import Glibc
#endif
import Platform

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
    static func entries(of directory: String) -> [String] { (try? Directory.entries(directory)) ?? [] }
}

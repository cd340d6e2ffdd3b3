#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// The image files of a replay folder (.pgm, .png, .jpg, .jpeg, any case), in natural name order:
/// digit runs compare by value, so frame2.png comes before frame10.png. Other names are ignored.
///
/// Bounds: the folder may hold at most `DirectoryLimit.replay` entries (every entry counts); a frame
/// name that is not a regular file (a FIFO, a device, a socket, a folder, or a symbolic link to one, or a
/// dangling link) refuses the whole replay at start (exit 2) with a line naming the entry: skipping it
/// would replay a different recording than the one asked for, and reading it could block or never end.
/// Each frame is read later as a `BoundedFile` of at most `FileSizeLimit.image`, which checks again.
public enum FrameDirectory {
    public static let extensions = ["pgm", "png", "jpg", "jpeg"]

    /// Full paths of the frames in `path`, in play order. Throws when the folder cannot be read, holds
    /// more than `limit` entries, holds a frame that is not a regular file, or holds no frames.
    public static func list(_ path: String, limit: DirectoryLimit = .replay) throws(UsageError) -> [String] {
        let base = path.hasSuffix("/") ? path : path + "/"
        var names: [String] = []
        do throws(BoundedFileError) {
            let directory = try BoundedDirectory.open(path)
            defer { directory.close() }
            for name in try directory.names(limit: limit) {
                guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { continue }
                let ext = name[name.index(after: dot)...].lowercased()
                guard extensions.contains(ext) else { continue }
                switch directory.kind(of: name) {
                case .success(.regular): names.append(name)
                case .success(let kind):
                    let link = BoundedFile.isSymbolicLink(base + name)
                    throw BoundedFileError(path: base + name, reason: .notRegular(kind, viaSymbolicLink: link))
                case .failure(let e):
                    throw BoundedFileError(path: base + name, reason: .system(operation: "stat", e))
                }
            }
        } catch {
            if error.path == path { throw UsageError("cannot read folder \(path): \(error.reasonText)") }
            throw UsageError("cannot replay \(error.path): \(error.reasonText) (replay frames must be regular files)")
        }
        guard !names.isEmpty else {
            throw UsageError("replay folder \(path) holds no frames (want .pgm, .png or .jpg files)")
        }
        names.sort(by: naturalOrder)
        return names.map { base + $0 }
    }

    /// Natural order: runs of digits compare as numbers, everything else byte by byte.
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var i = 0, j = 0
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                var i2 = i, j2 = j
                while i2 < x.count && isDigit(x[i2]) { i2 += 1 }
                while j2 < y.count && isDigit(y[j2]) { j2 += 1 }
                // Compare numerically: strip leading zeros, then by length, then digit by digit.
                var si = i, sj = j
                while si < i2 - 1 && x[si] == 0x30 { si += 1 }
                while sj < j2 - 1 && y[sj] == 0x30 { sj += 1 }
                if i2 - si != j2 - sj { return i2 - si < j2 - sj }
                for k in 0..<(i2 - si) where x[si + k] != y[sj + k] { return x[si + k] < y[sj + k] }
                if i2 - i != j2 - j { return i2 - i < j2 - j } // fewer leading zeros first
                i = i2
                j = j2
            } else {
                if x[i] != y[j] { return x[i] < y[j] }
                i += 1
                j += 1
            }
        }
        return x.count - i < y.count - j
    }
}

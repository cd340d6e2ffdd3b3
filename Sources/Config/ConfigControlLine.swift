#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Writes `camera-control = NAME=VALUE` into a config file (`scangate status --control NAME=VALUE --save`).
///
/// The line goes into `[camera]`: it replaces the first `camera-control` line there for the same control
/// (names compared as v4l2-ctl writes them, so `Brightness` and `brightness` are one) and removes any
/// later one for it; else it goes after the section's last `camera-control` line, or after its last
/// setting; a file without `[camera]` gets the section at its end. Every other line, comment and blank
/// line stays as it was, byte for byte. The file is replaced whole (`AtomicFile`: a temporary file beside
/// it, fsync, rename, fsync of the directory) with the mode it had; a symbolic link is followed and the
/// file it names replaced.
public enum ConfigControlLine {
    /// `text` with the line set (pure: for tests and for `write`).
    public static func setting(_ name: String, to value: Int, in text: String) -> String {
        let key = CameraControlName.normalise(name)
        let newLine = "camera-control = \(key)=\(value)"
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if text.isEmpty || text.hasSuffix("\n") { lines.removeLast() }
        var section: String?
        var cameraStart: Int?
        var lastSetting: Int?, lastControl: Int?
        var matches: [Int] = []
        for (i, line) in lines.enumerated() {
            let trimmed = line.trimmingBlanks
            if trimmed.hasPrefix("[") {
                let close = trimmed.firstIndex(of: "]") ?? trimmed.endIndex
                section = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close]).trimmingBlanks
                if section == "camera", cameraStart == nil { cameraStart = i }
                continue
            }
            guard section == "camera", let first = trimmed.first, first != "#", first != ";" else { continue }
            lastSetting = i
            guard let (k, v) = assignment(trimmed), k == "camera-control" else { continue }
            lastControl = i
            if let eq = v.firstIndex(of: "="), CameraControlName.normalise(String(v[..<eq])) == key { matches.append(i) }
        }
        if let first = matches.first {
            lines[first] = newLine
            for i in matches.dropFirst().reversed() { lines.remove(at: i) }
        } else if let after = lastControl ?? lastSetting ?? cameraStart {
            lines.insert(newLine, at: after + 1)
        } else {
            if let last = lines.last, !last.trimmingBlanks.isEmpty { lines.append("") }
            lines += ["[camera]", newLine]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The key and the value of a `key = value` line as inih splits it (at the first `=` or `:`; a `;`
    /// after a blank starts a comment; surrounding quotes removed).
    static func assignment(_ line: String) -> (String, String)? {
        guard let split = line.firstIndex(where: { $0 == "=" || $0 == ":" }) else { return nil }
        let key = String(line[..<split]).trimmingBlanks
        let chars = Array(line[line.index(after: split)...])
        var end = chars.count
        for i in chars.indices where i > 0 && chars[i] == ";" && (chars[i - 1] == " " || chars[i - 1] == "\t") {
            end = i
            break
        }
        return (key, ConfigValue.unquote(String(chars[..<end]).trimmingBlanks))
    }

    /// Why `path` cannot be rewritten (nil when it can): checked before the daemon is asked anything.
    public static func problem(writing path: String) -> String? {
        let target = resolved(path)
        if access(target, F_OK) != 0 {
            return "cannot write \(path): it does not exist (give --config the daemon's config file)"
        }
        if access(target, W_OK) != 0 { return "cannot write \(path): \(Errno.current) (run as root, or make it writable)" }
        let directory = FilePath.parent(of: target)
        if access(directory, W_OK) != 0 {
            return "cannot write \(path): its directory \(directory): \(Errno.current) (a temporary file is written beside it)"
        }
        return nil
    }

    /// Sets the line in the file `path`, atomically. Throws `UsageError` naming the file.
    public static func write(_ name: String, to value: Int, file path: String) throws(UsageError) {
        let target = resolved(path)
        let bytes: [UInt8]
        do throws(BoundedFileError) {
            bytes = try ConfigFileReader.readAll(path: target)
        } catch {
            throw UsageError("cannot read \(path): \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw UsageError("\(path) is not UTF-8 text") }
        var info = stat()
        let mode: mode_t = stat(target, &info) == 0 ? info.st_mode & 0o7777 : 0o644
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(target, with: Array(setting(name, to: value, in: text).utf8), mode: mode,
                                   temporary: FilePath.parent(of: target) + "/." + FilePath.name(of: target) + ".tmp-\(getpid())")
        } catch {
            if !error.replaced { throw UsageError("cannot write \(path): \(error); it is unchanged") }
            throw UsageError("\(path) was written, but syncing its directory failed (\(error)); after a power cut the old file may be back")
        }
    }

    /// The file a symbolic link names (the link itself stays).
    static func resolved(_ path: String) -> String {
        guard let r = realpath(path, nil) else { return path }
        defer { free(r) }
        return String(cString: r)
    }
}

extension String {
    /// Without leading and trailing blanks (space, tab, CR).
    fileprivate var trimmingBlanks: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform

/// The reference decoder's results (Tests/LiveFrames/score_reference.py: zxing-cpp 3.1.1 from PyPI,
/// all formats, try_invert, no try_rotate or try_downscale), read from `reference.json` beside the frames.
public struct LiveFrameReference: Sendable {
    public struct Result: Sendable {
        public let read: Bool
        public let misreads: Int
        public let cpuMs: Double?
    }

    public let decoder: String
    public let repeats: Int
    public let results: [String: Result]

    public var note: String {
        "\(decoder): all formats, try_invert, no try_rotate or try_downscale; Python, timed in a process of its own "
            + "just before this one, best of \(repeats)"
    }

    /// `directory/reference.json`, or nil when there is none. Throws UsageError naming the file when it
    /// is malformed or was made for other frames.
    public static func load(directory: String, for frames: LiveFrameSet) throws(UsageError) -> LiveFrameReference? {
        let path = directory + "/reference.json"
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let bytes = try FileBytes.read(path: path, limit: .benchManifest)
        let json: JSONValue
        do { json = try JSONValue.parse(bytes, maxBytes: FileSizeLimit.benchManifest.bytes) } catch {
            throw UsageError("cannot read \(path): \(error)")
        }
        if let key = json["generator_key"]?.stringValue, key != frames.key {
            throw UsageError("cannot use \(path): it scored frames \(key), these are \(frames.key) (run scripts/live-frames again)")
        }
        guard let list = json["frames"]?.arrayValue else { throw UsageError("cannot read \(path): no frames list") }
        var results: [String: Result] = [:]
        for (i, f) in list.enumerated() {
            guard let file = f["file"]?.stringValue, let read = f["read"]?.boolValue,
                  let misreads = f["misreads"]?.numberValue?.int64
            else { throw UsageError("cannot read \(path): frame \(i) has no file, read or misreads") }
            results[file] = Result(read: read, misreads: Int(misreads), cpuMs: f["cpu_ms"]?.numberValue?.double)
        }
        return LiveFrameReference(decoder: json["decoder"]?.stringValue ?? "reference",
                                  repeats: Int(json["repeats"]?.numberValue?.int64 ?? 1), results: results)
    }

    /// Its column in the report; frames it did not score count as not read.
    public func column(for frames: LiveFrameSet) -> LiveFrameReport.Column {
        var column = LiveFrameReport.Column(decoder: decoder, categories: frames.categories.map(\.name))
        column.inProcess = false
        for item in frames.items {
            let r = results[item.file]
            column.add(file: item.file, category: item.category, showsCode: item.payload != nil, read: item.payload != nil && (r?.read ?? false),
                       misreads: r?.misreads ?? 0, cpuMs: r?.cpuMs)
        }
        return column
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform

/// The live-path frames (docs/live-path-frames.md): synthetic 640x480 camera frames by category, made by
/// Tests/LiveFrames/generate.py with independent encoders, each with the payload it shows. Read from a
/// directory with `manifest.json` and the PGM files it names; the frames themselves are read one at a
/// time (`frame(at:)`), so a large set is not held in memory.
public struct LiveFrameSet: Sendable {
    public struct Category: Sendable, Equatable {
        public let name: String
        /// zxing-cpp's name of the format shown (`QRCode`, `DataMatrix`...); nil for empty scenes.
        public let format: String?
        public let description: String
    }

    public struct Item: Sendable {
        /// Relative to the directory.
        public let file: String
        public let category: String
        /// The payload shown, byte-exact; nil for an empty scene.
        public let payload: [UInt8]?
    }

    public let directory: String
    /// The generator's cache key (hash of the generator, N, seed and encoders).
    public let key: String
    public let width: Int
    public let height: Int
    public let categories: [Category]
    public let items: [Item]

    /// Reads `directory/manifest.json`. Throws UsageError naming the file and what is wrong in it.
    public static func load(directory: String) throws(UsageError) -> LiveFrameSet {
        let path = directory + "/manifest.json"
        let bytes = try FileBytes.read(path: path, limit: FileSizeLimit.benchManifest)
        let json: JSONValue
        do { json = try JSONValue.parse(bytes, maxBytes: FileSizeLimit.benchManifest.bytes) } catch {
            throw UsageError("cannot read \(path): \(error)")
        }
        func bad(_ why: String) -> UsageError { UsageError("cannot read \(path): \(why)") }
        guard let width = json["width"]?.numberValue?.int64, let height = json["height"]?.numberValue?.int64,
              (1...8192).contains(width), (1...8192).contains(height)
        else { throw bad("no frame width and height (1-8192)") }
        guard let cats = json["categories"]?.arrayValue, !cats.isEmpty else { throw bad("no categories") }
        var categories: [Category] = []
        for (i, c) in cats.enumerated() {
            guard let name = c["name"]?.stringValue, !name.isEmpty else { throw bad("category \(i) has no name") }
            guard !categories.contains(where: { $0.name == name }) else { throw bad("category \(name) is listed twice") }
            categories.append(Category(name: name, format: c["format"]?.stringValue,
                                       description: c["description"]?.stringValue ?? ""))
        }
        guard let frames = json["frames"]?.arrayValue, !frames.isEmpty else { throw bad("no frames") }
        var items: [Item] = []
        items.reserveCapacity(frames.count)
        for (i, f) in frames.enumerated() {
            guard let file = f["file"]?.stringValue, !file.isEmpty, !file.hasPrefix("/"),
                  !file.split(separator: "/").contains("..")
            else { throw bad("frame \(i) has no file name inside the directory") }
            guard let category = f["category"]?.stringValue, categories.contains(where: { $0.name == category }) else {
                throw bad("frame \(file) names no listed category")
            }
            // Every frame is there before the run starts: a missing one fails now, in one line.
            var info = stat()
            guard stat(directory + "/" + file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                throw UsageError("cannot read \(directory)/\(file): no such file (listed in \(path))")
            }
            var payload: [UInt8]? = nil
            if let b64 = f["payload_b64"], b64 != .null {
                guard let text = b64.stringValue, let decoded = Base64.decode(text) else {
                    throw bad("frame \(file): payload_b64 is not base64")
                }
                payload = decoded
            }
            items.append(Item(file: file, category: category, payload: payload))
        }
        let key = json["generator"]?["key"]?.stringValue ?? "unknown"
        return LiveFrameSet(directory: directory, key: key, width: Int(width), height: Int(height),
                            categories: categories, items: items)
    }

    /// Frame `index` read from its PGM file, numbered `index`. Throws UsageError naming the file.
    public func frame(at index: Int) throws(UsageError) -> Frame {
        let item = items[index]
        let path = directory + "/" + item.file
        let image = try ImageFile.read(path: path)
        guard image.width == width, image.height == height else {
            throw UsageError("cannot read \(path): \(image.width)x\(image.height), the manifest says \(width)x\(height)")
        }
        return Frame(width: width, height: height, sequence: UInt64(index), captureTime: .init(nanoseconds: 0),
                     luma: image.pixels)
    }
}

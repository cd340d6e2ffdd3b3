#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Writes 8-bit frames as YUV4MPEG2, `mono` (luma only) or `420jpeg` (neutral chroma, value 128).
/// Owns its file descriptor until `close()`.
public final class Y4MWriter {
    public enum Layout: String, Sendable, CaseIterable { case mono, c420jpeg = "420jpeg" }

    public let path: String
    public let width: Int
    public let height: Int
    private let layout: Layout
    private let file: OwnedFileDescriptor
    private let chroma: [UInt8]

    public init(path: String, width: Int, height: Int, fps: Double, layout: Layout = .mono) throws(UsageError) {
        self.path = path
        self.width = width
        self.height = height
        self.layout = layout
        switch FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644) {
        case .success(let fd): file = OwnedFileDescriptor(fd)
        case .failure(let e): throw UsageError("cannot write \(path): \(e)")
        }
        let chromaLayout: Y4MHeader.Chroma = layout == .mono ? .mono : .c420jpeg
        chroma = [UInt8](repeating: 128, count: chromaLayout.chromaBytes(width: width, height: height))
        let header = Y4MHeader(width: width, height: height, fps: fps, chroma: chromaLayout)
        try write(header.encoded())
    }

    /// Appends one frame; `luma` must be width*height bytes.
    public func write(luma: [UInt8]) throws(UsageError) {
        guard luma.count == width * height else {
            throw UsageError("cannot write \(path): frame is \(luma.count) bytes, want \(width * height)")
        }
        try write(Array("FRAME\n".utf8))
        try write(luma)
        if !chroma.isEmpty { try write(chroma) }
    }

    public func close() { file.close() }

    deinit { file.close() }

    private func write(_ bytes: [UInt8]) throws(UsageError) {
        if case .failure(let e) = file.fd.writeAll(bytes) { throw UsageError("cannot write \(path): \(e)") }
    }
}

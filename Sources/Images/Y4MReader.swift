import Core

/// Streams the luma planes of a YUV4MPEG2 file, one frame at a time (files can be large: nothing is
/// read ahead beyond a small buffer, and chroma is skipped through it). Owns its file until `close()`.
///
/// Bounds: the file is a regular file of at most `FileSizeLimit.y4m` (a FIFO, a device such as a link
/// to /dev/zero, or a socket is refused at once without blocking); the stream header line is at most
/// `headerLineLimit` bytes, each FRAME line at most `frameLineLimit`, and a frame at most
/// `ImageLimits.maximumPixels` luma bytes (checked by `Y4MHeader.parse` before anything is allocated).
public final class Y4MReader {
    public let path: String
    public let header: Y4MHeader
    /// Index of the next frame `nextLuma()` returns, from 0.
    public private(set) var frameIndex = 0

    private let reader: BufferedFileReader
    private let dataOffset: Int

    public static let headerLineLimit = 4096
    public static let frameLineLimit = 1024

    /// Opens `path` and reads its stream header.
    public init(path: String) throws(UsageError) {
        self.path = path
        reader = try BufferedFileReader(path: path, limit: .y4m)
        switch try reader.readLine(limit: Y4MReader.headerLineLimit) {
        case .line(let line):
            header = try Y4MHeader.parse(line: line, name: path)
            dataOffset = line.count + 1
        case .endOfFile:
            throw UsageError("cannot read \(path): the file is empty (want a YUV4MPEG2 file)")
        case .unterminated, .tooLong:
            throw UsageError("cannot read \(path): not a YUV4MPEG2 (.y4m) file (no header line)")
        }
    }

    /// The next frame's luma plane (width*height bytes), nil at the clean end of the file.
    /// A frame cut short throws a UsageError naming the file and the frame number.
    public func nextLuma() throws(UsageError) -> [UInt8]? {
        switch try reader.readLine(limit: Y4MReader.frameLineLimit) {
        case .endOfFile:
            return nil
        case .unterminated:
            throw UsageError("cannot read \(path): frame \(frameIndex) is truncated (in its FRAME header)")
        case .tooLong:
            throw UsageError("cannot read \(path): frame \(frameIndex) does not start with a FRAME header (corrupt file)")
        case .line(let line):
            guard line.starts(with: Array("FRAME".utf8)), line.count == 5 || line[5] == 0x20 else {
                throw UsageError("cannot read \(path): frame \(frameIndex) does not start with a FRAME header (corrupt file)")
            }
        }
        let lumaCount = header.width * header.height
        var luma = [UInt8](repeating: 0, count: lumaCount)
        let got = try reader.read(into: &luma, count: lumaCount)
        guard got == lumaCount else {
            throw UsageError("cannot read \(path): frame \(frameIndex) is truncated (\(got) of \(lumaCount) luma bytes)")
        }
        let chroma = header.chroma.chromaBytes(width: header.width, height: header.height)
        if chroma > 0 {
            let skipped = try reader.skip(count: chroma)
            guard skipped == chroma else {
                throw UsageError("cannot read \(path): frame \(frameIndex) is truncated (\(skipped) of \(chroma) chroma bytes)")
            }
        }
        frameIndex += 1
        return luma
    }

    /// Back to frame 0 (for --loop).
    public func rewind() throws(UsageError) {
        try reader.seek(to: dataOffset)
        frameIndex = 0
    }

    public func close() { reader.close() }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform
import Settings

/// Replays recorded footage: a YUV4MPEG2 file (only the luma plane is used) or a folder of PGM/PNG/JPEG
/// frames in natural name order. Frames are numbered from 0 in file order; capture time = frame / fps,
/// where fps is the Y4M header's `F` rate if present, else `--fps`. Paced in real time unless `--fast`;
/// ends (nil) after the last frame unless `--loop`. The footage defines the frame size; every frame must
/// have the first frame's size.
public final class ReplaySource: FrameSource {
    public let name: String
    public let isLive: Bool
    public let path: String
    /// Frames per second used for capture times and pacing.
    public let fps: Double
    private let settings: CaptureSettings
    private let kind: Kind
    private var y4m: Y4MReader?
    private var next = 0
    private var sequence: UInt64 = 0
    private var size: (width: Int, height: Int)?
    private var pacer: FramePacer

    private enum Kind {
        case y4m
        case folder([String])
    }

    /// Checks the path (a .y4m header is read, a folder is listed) so bad input fails at start with exit 2.
    public init(path: String, settings: CaptureSettings) throws(UsageError) {
        guard !path.isEmpty else { throw UsageError("--camera replay: needs a FILE.y4m or a folder of frames") }
        self.name = "replay:" + path
        self.path = path
        self.settings = settings
        self.isLive = !settings.fast
        // Only a folder or a regular file: a FIFO is refused here, before open(2) could wait for a writer.
        let fileKind: FileKind
        switch BoundedFile.kind(of: path) {
        case .success(let k): fileKind = k
        case .failure(let e): throw UsageError("cannot read \(path): \(e) (want a .y4m file or a folder of frames)")
        }
        guard fileKind == .directory || fileKind == .regular else {
            let what = BoundedFileError(path: path, reason: .notRegular(fileKind, viaSymbolicLink: BoundedFile.isSymbolicLink(path)))
            throw UsageError("\(what.description) (want a .y4m file or a folder of frames)")
        }
        if fileKind == .directory {
            kind = .folder(try FrameDirectory.list(path))
            fps = settings.fps
        } else {
            let reader = try Y4MReader(path: path)
            kind = .y4m
            fps = reader.header.fps ?? settings.fps
            size = (reader.header.width, reader.header.height)
            reader.close()
        }
        pacer = FramePacer(fps: fps)
    }

    public func open() throws {
        close()
        if case .y4m = kind { y4m = try Y4MReader(path: path) }
        next = 0
        sequence = 0
        pacer.reset()
    }

    public func nextFrame(until stop: StopToken) throws -> Frame? {
        guard !stop.isStopped, let luma = try nextLuma() else { return nil }
        if isLive { pacer.waitForNextFrame() }
        let frame = Frame(width: luma.width, height: luma.height, sequence: sequence,
                          captureTime: Frame.mediaTime(sequence: sequence, fps: fps),
                          dequeuedAt: .now(), luma: luma.pixels)
        sequence += 1
        return frame
    }

    public func close() {
        y4m?.close()
        y4m = nil
    }

    /// The next image, rewinding at the end when looping; nil at the end otherwise.
    private func nextLuma() throws(UsageError) -> LumaImage? {
        for attempt in 0..<2 {
            switch kind {
            case .y4m:
                if y4m == nil { y4m = try Y4MReader(path: path) }
                guard let reader = y4m else { return nil }
                if let pixels = try reader.nextLuma() {
                    return LumaImage(width: reader.header.width, height: reader.header.height, pixels: pixels)
                }
                guard settings.loop, attempt == 0, sequence > 0 else { return nil }
                try reader.rewind()
            case .folder(let files):
                if next < files.count {
                    let file = files[next]
                    next += 1
                    let image = try ImageFile.read(path: file)
                    if let size, size != (image.width, image.height) {
                        throw UsageError("cannot replay \(file): it is \(image.width)x\(image.height) but the replay's frames are \(size.width)x\(size.height) (all frames must have one size)")
                    }
                    size = (image.width, image.height)
                    return image
                }
                guard settings.loop, attempt == 0 else { return nil }
                next = 0
            }
        }
        return nil
    }
}

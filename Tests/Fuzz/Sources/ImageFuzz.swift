#if canImport(Glibc)
import Glibc
#endif
import Core
import Images

/// The image readers: any bytes either decode to a consistent image or throw a UsageError.
enum ImageFuzz {
    /// ImageFile.decode (PNG, JPEG or PGM by magic bytes; one corpus per format).
    @Sendable static func decode(_ bytes: [UInt8]) {
        guard let image = try? ImageFile.decode(bytes, name: "fuzz") else { return }
        require(image.width > 0 && image.height > 0, "decoded an empty \(image.width)x\(image.height) image")
        require(image.pixels.count == image.width * image.height, "pixel count does not match the size")
    }

    /// Where the Y4M input is written for Y4MReader (which reads a path): one file per process, in tmpfs.
    static let scratchPath: String = {
        var info = stat()
        let dir = stat("/dev/shm", &info) == 0 ? "/dev/shm" : "/tmp"
        return "\(dir)/scangate-fuzz-\(getpid()).y4m"
    }()

    /// Y4MHeader.parse on the first line, then Y4MReader over the whole input: every frame it returns
    /// has exactly width*height bytes, it never returns more frames than the file holds, and rewind
    /// gives frame 0 again.
    @Sendable static func y4m(_ bytes: [UInt8]) {
        let firstLine = Array(bytes.prefix { $0 != 0x0A })
        if let header = try? Y4MHeader.parse(line: firstLine, name: "fuzz") {
            require(header.width > 0 && header.height > 0, "header with an empty size")
            if let fps = header.fps { require(fps.isFinite && fps > 0, "header with fps \(fps)") }
        }
        guard write(bytes, to: scratchPath) else {
            require(false, "cannot write \(scratchPath)")
            return
        }
        defer { unlink(scratchPath) }
        guard let reader = try? Y4MReader(path: scratchPath) else { return }
        defer { reader.close() }
        let frameBytes = reader.header.width * reader.header.height
        var frames: [[UInt8]] = []
        while true {
            guard let luma = try? reader.nextLuma() else { break }
            require(luma.count == frameBytes, "frame of \(luma.count) bytes, want \(frameBytes)")
            frames.append(luma)
            require(frames.count * frameBytes <= bytes.count, "more frames than the file holds")
        }
        if let first = frames.first {
            do {
                try reader.rewind()
                let again = try reader.nextLuma()
                require(again == first, "rewind did not return frame 0")
            } catch {
                require(false, "rewind failed: \(error)")
            }
        }
    }

    static func write(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }
}

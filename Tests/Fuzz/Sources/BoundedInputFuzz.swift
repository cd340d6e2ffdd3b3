#if canImport(Glibc)
import Glibc
#endif
import Config
import Core
import Images
import Platform
import Replay
import Simulator
import Settings

/// The file readers on hostile files (issue 16): the config file, a scenario, a replay folder, a Y4M
/// recording and an image, each given a path that is a regular file with the input's bytes, a sparse file
/// just over its limit, a FIFO with no writer, a link to /dev/zero or /dev/null, a folder, a dangling link
/// or a socket; a replay folder gets entries of all those kinds. Invariants: the reader returns or throws
/// one line naming the path; anything but a regular file is refused as such, an oversize file with its
/// limit; a folder listing returns only regular frames in natural order within its entry limit and
/// refuses exactly when it must; and each input ends within `timeLimitSeconds`. Memory: the run script
/// gives this target `-malloc_limit_mb=256` (no single allocation beyond 256 MB: a frame is at most
/// 16 MB, an image 64 MB) besides the common `-rss_limit_mb`.
enum BoundedInputFuzz {
    /// Below libFuzzer's -timeout=10. The slowest legal input found, a 4096x4096 scenario with blur 20 and codes
    /// near the pixel budget, takes 5.2 s here under ASan and coverage (1.2 s for a release `scangate run`).
    static let timeLimitSeconds = 8.0

    /// Fresh for every input, in tmpfs.
    static let root: String = {
        var info = stat()
        let dir = stat("/dev/shm", &info) == 0 ? "/dev/shm" : "/tmp"
        return "\(dir)/scangate-fuzz-files-\(getpid())"
    }()

    enum Reader: CaseIterable { case config, scenario, replayFolder, y4m, image }

    enum Shape: CaseIterable {
        case regular, oversize, fifo, devZero, devNull, folder, dangling, socket, linkToRegular

        var isRegular: Bool { self == .regular || self == .linkToRegular }
    }

    @Sendable static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let reader = input.pick(Reader.allCases)
        removeTree(root)
        guard mkdir(root, 0o700) == 0 else {
            require(false, "cannot make \(root): \(Errno.current)")
            return
        }
        defer { removeTree(root) }
        let start = MonotonicInstant.now()
        switch reader {
        case .replayFolder: folder(&input)
        default: file(reader, &input)
        }
        let seconds = MonotonicInstant.now().milliseconds(since: start) / 1000
        require(seconds < timeLimitSeconds, "\(reader) took \(seconds) s (bound \(timeLimitSeconds) s)")
    }

    // MARK: one file

    static func limit(of reader: Reader) -> FileSizeLimit {
        switch reader {
        case .config: return .config
        case .scenario: return .scenario
        case .y4m, .replayFolder: return .y4m
        case .image: return .image
        }
    }

    static func file(_ reader: Reader, _ input: inout FuzzInput) {
        let shape = input.pick(Shape.allCases)
        let extra = Int(input.byte())
        let name: String
        switch reader {
        case .config: name = "scangate.conf"
        case .scenario: name = "door.scenario"
        case .y4m, .replayFolder: name = "clip.y4m"
        case .image: name = "photo.png"
        }
        let path = root + "/" + name
        let content = input.rest()
        make(shape, at: path, content: content, oversizeBy: limit(of: reader).bytes + 1 + extra)
        let failure: String?
        switch reader {
        case .config:
            do { _ = try ConfigFile.load(path: path); failure = nil } catch { failure = error.message }
        case .scenario:
            var settings = CaptureSettings()
            settings.fast = true
            do {
                let camera = try SimulatedCamera(spec: path, settings: settings)
                try camera.open()
                _ = try camera.nextFrame(until: StopToken())
                failure = nil
            } catch let e as UsageError {
                failure = e.message
            } catch {
                require(false, "scenario: not a UsageError: \(error)")
                return
            }
        case .y4m, .replayFolder:
            var settings = CaptureSettings()
            settings.fast = true
            failure = replay(path, settings: settings, frames: 4)
        case .image:
            do { _ = try ImageFile.read(path: path); failure = nil } catch { failure = error.message }
        }
        guard let error = failure else {
            require(shape.isRegular, "\(reader) accepted a \(shape) path")
            return
        }
        require(!error.contains("\n"), "error is not one line: \(error)")
        require(error.contains(path), "error does not name \(path): \(error)")
        switch shape {
        case .fifo, .devZero, .devNull, .socket:
            require(error.contains("not a regular file"), "\(shape) not refused as such: \(error)")
        case .folder where reader != .y4m:
            require(error.contains("it is a directory, not a regular file"), "folder not refused as such: \(error)")
        case .oversize:
            require(error.contains("are limited to"), "oversize file not refused with its limit: \(error)")
        case .dangling:
            require(error.contains("ENOENT"), "dangling link: \(error)")
        default:
            break
        }
    }

    /// A replay (Y4M file or folder) opened and read for up to `frames` frames: nil, or the error message.
    static func replay(_ path: String, settings: CaptureSettings, frames: Int) -> String? {
        do {
            let source = try ReplaySource(path: path, settings: settings)
            defer { source.close() }
            try source.open()
            for _ in 0..<frames {
                guard let frame = try source.nextFrame(until: StopToken()) else { break }
                require(frame.luma.count == frame.width * frame.height, "frame of \(frame.luma.count) bytes")
            }
            return nil
        } catch let e as UsageError {
            return e.message
        } catch {
            require(false, "replay: not a UsageError: \(error)")
            return nil
        }
    }

    // MARK: a folder

    static let names = ["0001.pgm", "2.png", "frame10.jpg", "frame9.JPEG", "notes.txt", ".hidden.png", "10.pgm",
                        "b.pgm", "a.pgm", "README", "x.y4m", "01.png"]
    static let folderLimit = DirectoryLimit(entries: 12, kind: "replay folders")

    static func folder(_ input: inout FuzzInput) {
        let dir = root + "/frames"
        guard mkdir(dir, 0o700) == 0 else { return require(false, "mkdir \(dir): \(Errno.current)") }
        let count = Int(input.byte()) % 20
        var made: [String: Shape] = [:]
        var extraNames = 0
        let pgm = PGMCodec.encode(LumaImage(width: 2, height: 2, pixels: [0, 64, 128, 255]))
        for _ in 0..<count {
            let shape = input.pick(Shape.allCases)
            var name = input.pick(names)
            if made[name] != nil {
                extraNames += 1
                name = "extra\(extraNames).txt"
            }
            made[name] = shape
            make(shape == .oversize ? .regular : shape, at: dir + "/" + name, content: pgm, oversizeBy: 0)
            if shape == .linkToRegular { made[name + ".target"] = .regular }  // the link's target, beside it
        }
        let frameNames = made.keys.filter { name in
            guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { return false }
            return FrameDirectory.extensions.contains(name[name.index(after: dot)...].lowercased())
        }
        let badFrame = frameNames.contains { !(made[$0] ?? .regular).isRegular && made[$0] != .oversize }
        let tooMany = made.count > folderLimit.entries
        do {
            let list = try FrameDirectory.list(dir, limit: folderLimit)
            require(!tooMany, "\(made.count) entries listed with a limit of \(folderLimit.entries)")
            require(!badFrame, "a non-regular frame was listed: \(made)")
            require(Set(list) == Set(frameNames.map { dir + "/" + $0 }), "listed \(list), frames \(frameNames)")
            let names = list.map { String($0.dropFirst(dir.count + 1)) }
            for (a, b) in zip(names, names.dropFirst()) {
                require(!FrameDirectory.naturalOrder(b, a), "not in natural order: \(a) before \(b)")
            }
        } catch {
            require(!error.message.contains("\n"), "error is not one line: \(error.message)")
            require(error.message.contains(dir), "error does not name the folder: \(error.message)")
            require(tooMany || badFrame || frameNames.isEmpty, "refused a sound folder \(made): \(error.message)")
            if tooMany { require(error.message.contains("replay folders are limited to 12"), error.message) }
        }
    }

    // MARK: making the files

    static func make(_ shape: Shape, at path: String, content: [UInt8], oversizeBy size: Int) {
        switch shape {
        case .regular:
            require(ImageFuzz.write(content, to: path), "cannot write \(path)")
        case .oversize:
            require(ImageFuzz.write(content, to: path), "cannot write \(path)")
            require(truncate(path, off_t(size)) == 0, "truncate \(path): \(Errno.current)")
        case .fifo:
            require(mkfifo(path, 0o600) == 0, "mkfifo \(path): \(Errno.current)")
        case .devZero:
            require(symlink("/dev/zero", path) == 0, "symlink \(path): \(Errno.current)")
        case .devNull:
            require(symlink("/dev/null", path) == 0, "symlink \(path): \(Errno.current)")
        case .folder:
            require(mkdir(path, 0o700) == 0, "mkdir \(path): \(Errno.current)")
        case .dangling:
            require(symlink(root + "/nowhere", path) == 0, "symlink \(path): \(Errno.current)")
        case .socket:
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            require(fd >= 0, "socket: \(Errno.current)")
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            require(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long: \(path)")
            withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            require(bound == 0, "bind \(path): \(Errno.current)")
        case .linkToRegular:
            let target = path + ".target"
            require(ImageFuzz.write(content, to: target), "cannot write \(target)")
            require(symlink(target, path) == 0, "symlink \(path): \(Errno.current)")
        }
    }

    /// rm -r of the fuzz root (files, links, FIFOs, sockets, one level of folders and their entries).
    static func removeTree(_ path: String) {
        guard let dir = opendir(path) else {
            unlink(path)
            return
        }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            var info = stat()
            if lstat(child, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                removeTree(child)
            } else {
                unlink(child)
            }
        }
        closedir(dir)
        rmdir(path)
    }
}

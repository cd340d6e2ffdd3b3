#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform
import Simulator
import Settings

/// `scangate render SCENARIO --out FILE.y4m|DIR`: writes every frame of one pass of a scenario, exactly as
/// the simulated camera produces them, to a Y4M file or a folder of numbered PGM/PNG files (for replay).
enum RenderCommand {
    static let help = """
        Usage: scangate render SCENARIO --out FILE.y4m|DIR [--format y4m|y4m-420|pgm|png]
                               [--width N] [--height N] [--fps RATE]

        Renders every frame of one pass of a scenario (a FILE.scenario, or sim:PAYLOAD) for replay.
          --out PATH       a .y4m file, or a folder (created if missing) for frame-000000.pgm, ...
          --format F       y4m (mono), y4m-420 (4:2:0, neutral chroma), pgm or png
                           (default: y4m for a .y4m path, else pgm)
          --width/--height/--fps   frame size and rate when the scenario does not set them (640x480, 15)
        Exit: 0 done, 2 bad flag, scenario or output path.
        """

    enum Format: String, CaseIterable { case y4m, y4m420 = "y4m-420", pgm, png }

    static func run(_ arguments: [String]) -> Int32 {
        var scenarioPath: String?
        var out: String?
        var format: Format?
        var settings = CaptureSettings()
        settings.fast = true
        settings.loop = false
        var args = CommandArguments(arguments)
        do {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help":
                    print(help)
                    return 0
                case "--out": out = try args.value(arg, "a FILE.y4m or a DIR")
                case "--format":
                    let text = try args.value(arg, "one of y4m, y4m-420, pgm, png")
                    guard let f = Format(rawValue: text) else {
                        throw UsageError("--format: '\(text)' is not one of y4m, y4m-420, pgm, png")
                    }
                    format = f
                case "--width": settings.width = try args.number(arg, 16...4096)
                case "--height": settings.height = try args.number(arg, 16...4096)
                case "--fps": settings.fps = try args.decimal(arg, 0.5...240)
                default:
                    if arg.hasPrefix("--") { throw UsageError("unknown option \(arg) (see scangate render --help)") }
                    guard scenarioPath == nil else { throw UsageError("render takes one SCENARIO; got also '\(arg)'") }
                    scenarioPath = arg
                }
            }
            guard let scenarioPath else { throw UsageError("render needs a SCENARIO file (see scangate render --help)") }
            guard let out else { throw UsageError("render needs --out FILE.y4m or --out DIR") }
            let chosen = format ?? (out.lowercased().hasSuffix(".y4m") ? .y4m : .pgm)
            let spec = scenarioPath.hasPrefix("sim:") ? String(scenarioPath.dropFirst(4)) : scenarioPath
            if !scenarioPath.hasPrefix("sim:") {
                var info = stat()
                guard stat(spec, &info) == 0 else { throw UsageError("cannot read \(spec): \(Errno.current)") }
            }
            let camera = try SimulatedCamera(spec: spec, settings: settings)
            let count = try render(camera, to: out, format: chosen)
            print("wrote \(count) frames (\(camera.width)x\(camera.height) at \(camera.fps) fps) to \(out)")
            return ExitCode.success.rawValue
        } catch let error as UsageError {
            return usageError(error.message)
        } catch {
            return usageError("\(error)")
        }
    }

    /// Writes one pass of `camera`'s frames; returns how many.
    static func render(_ camera: SimulatedCamera, to out: String, format: Format) throws -> Int {
        try camera.open()
        defer { camera.close() }
        let stop = StopToken()
        switch format {
        case .y4m, .y4m420:
            let writer = try Y4MWriter(path: out, width: camera.width, height: camera.height, fps: camera.fps,
                                       layout: format == .y4m ? .mono : .c420jpeg)
            defer { writer.close() }
            for _ in 0..<camera.frameCount {
                guard let frame = try camera.nextFrame(until: stop) else { break }
                try writer.write(luma: frame.luma)
            }
        case .pgm, .png:
            if mkdir(out, 0o755) != 0 && errno != EEXIST {
                throw UsageError("cannot create folder \(out): \(Errno.current)")
            }
            for n in 0..<camera.frameCount {
                guard let frame = try camera.nextFrame(until: stop) else { break }
                let digits = String(n)
                let name = String(repeating: "0", count: max(0, 6 - digits.count)) + digits
                let image = LumaImage(width: frame.width, height: frame.height, pixels: frame.luma)
                try ImageFile.write(image, to: "\(out)/frame-\(name).\(format.rawValue)",
                                    format: format == .png ? .png : .pgm)
            }
        }
        return camera.frameCount
    }
}

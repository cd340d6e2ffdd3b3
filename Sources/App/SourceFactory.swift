import Core
import Simulator

/// Chooses the frame source from `--camera`: `sim:…`, `replay:…`, or a V4L2 device path.
enum SourceFactory {
    static func make(_ settings: CaptureSettings, logger: Logger) throws -> FrameSource {
        let camera = settings.camera
        if camera.hasPrefix("sim:") {
            return try SimulatedCamera(spec: String(camera.dropFirst(4)), settings: settings)
        }
        if camera.hasPrefix("replay:") {
            throw UsageError("--camera replay: is not available in this build")
        }
        throw UsageError("--camera \(camera): V4L2 cameras are not available in this build")
    }
}

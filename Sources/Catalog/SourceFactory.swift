import Camera
import Core
import Replay
import Settings
import Simulator

/// Chooses the frame source from `--camera`: `sim:…`, `replay:…`, or a V4L2 device path.
public enum SourceFactory {
    public static func make(_ settings: CaptureSettings, logger: Logger) throws -> FrameSource {
        let camera = settings.camera
        if camera.hasPrefix("sim:") {
            return try SimulatedCamera(spec: String(camera.dropFirst(4)), settings: settings)
        }
        if camera.hasPrefix("replay:") {
            return try ReplaySource(path: String(camera.dropFirst(7)), settings: settings)
        }
        return V4L2Camera(device: camera, settings: settings, logger: logger)
    }
}

/// What the user chose for the frame source (the `[camera]` section). The source's runtime state lives
/// in the source types, never here.
public struct CaptureSettings: SettingsSection {
    /// `sim:PAYLOAD`, `sim:FILE.scenario`, `replay:FILE.y4m`, `replay:DIR`, `/dev/videoN`, `/dev/v4l/by-id/…`.
    public var camera: String = "/dev/video0"
    public var width: Int = 640
    public var height: Int = 480
    public var fps: Double = 15
    /// Simulator and replay: as fast as the decoder goes, nothing dropped.
    public var fast: Bool = false
    /// Simulator and replay: start again at the end.
    public var loop: Bool = false
    /// Stop after this many frames (0: no limit).
    public var maxFrames: UInt64 = 0
    /// V4L2 controls to set at open, in order: ("exposure_time_absolute", "200").
    public var controls: [CameraControl] = []
    /// V4L2: mmap buffers to request (2–4).
    public var buffers: Int = 3
    /// V4L2: no frame for this long means the camera is lost.
    public var frameTimeoutMs: Int = 2000
    /// V4L2: the pixel format to ask for; `.auto` takes the best one the camera offers.
    public var pixelFormat: CapturePixelFormat = .auto

    public init() {}
}

public struct CameraControl: Equatable, Sendable {
    public var name: String
    public var value: Int
    public init(name: String, value: Int) { self.name = name; self.value = value }
}

/// `--pixel-format`: V4L2 formats whose luma ScanGate reads without conversion (MJPG: decoded to gray).
public enum CapturePixelFormat: String, CaseIterable, Sendable {
    case auto, grey = "GREY", yuyv = "YUYV", uyvy = "UYVY", nv12 = "NV12", yu12 = "YU12", rgb3 = "RGB3", bgr3 = "BGR3",
         mjpg = "MJPG"

    /// Accepts the names in any case: `auto`, `GREY`, `yuyv`, ...
    public init?(name: String) {
        guard let hit = CapturePixelFormat.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() })
        else { return nil }
        self = hit
    }
}

extension RunSettings {
    public var capture: CaptureSettings {
        get { self[CaptureSettings.self] }
        set { self[CaptureSettings.self] = newValue }
    }
}

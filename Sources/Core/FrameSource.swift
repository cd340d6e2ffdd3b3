import Platform

/// The source seam: the V4L2 camera, the simulator, replay.
/// Lifecycle (after pikvm/ustreamer): open → nextFrame… → close; a persistent source may be
/// closed and opened again after it was lost, and an open source may be handed from one pipeline run to
/// the next (a reload that kept the camera settings): it keeps no state about who asked it to stop.
/// Used from one capture thread at a time.
public protocol FrameSource: AnyObject {
    /// "sim:HELLO", "/dev/video0", "replay:clip.y4m": for logs and status.
    var name: String { get }
    /// True when frames arrive at the source's own pace (camera, paced replay): the handoff may
    /// replace a waiting frame. False (`--fast`): the source waits for the decoder, nothing is dropped.
    var isLive: Bool { get }
    /// True for devices that can vanish and come back (the capture thread then reopens with backoff).
    var isReconnectable: Bool { get }
    /// The open camera's controls, for the status socket's `controls` and `control` requests (nil: the
    /// source has none, as the simulator and replay).
    var liveControls: (any LiveCameraControls)? { get }

    func open() throws
    /// The next frame; nil at the end of a finite source (replay, a scenario without --loop), or soon
    /// (within one poll slice) after `stop` is stopped from another thread.
    /// Throws `CaptureError` for a lost device or a timeout.
    func nextFrame(until stop: StopToken) throws -> Frame?
    func close()
}

extension FrameSource {
    public var isReconnectable: Bool { false }
    public var liveControls: (any LiveCameraControls)? { nil }
}

/// Why a source could not deliver a frame.
public enum CaptureError: Error, CustomStringConvertible, Sendable {
    /// The device vanished or failed (ENODEV, EIO, node removed): close, reopen with backoff.
    case deviceLost(device: String, reason: String)
    /// No frame within the timeout.
    case timeout(device: String, milliseconds: Int)
    /// Input that can never work (bad file, unsupported format): exit 2.
    case badInput(String)

    public var description: String {
        switch self {
        case .deviceLost(let device, let reason): return "camera lost: \(device): \(reason)"
        case .timeout(let device, let ms): return "camera lost: \(device): no frame for \(ms) ms"
        case .badInput(let message): return message
        }
    }
}

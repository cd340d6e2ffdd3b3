import Platform

/// The source seam: the V4L2 camera, the simulator, replay.
/// Lifecycle (after pikvm/ustreamer): open → nextFrame… → close; a persistent source may be
/// closed and opened again after it was lost. Used from one capture thread only.
public protocol FrameSource: AnyObject {
    /// "sim:HELLO", "/dev/video0", "replay:clip.y4m": for logs and status.
    var name: String { get }
    /// True when frames arrive at the source's own pace (camera, paced replay): the handoff may
    /// replace a waiting frame. False (`--fast`): the source waits for the decoder, nothing is dropped.
    var isLive: Bool { get }
    /// True for devices that can vanish and come back (the capture thread then reopens with backoff).
    var isReconnectable: Bool { get }

    func open() throws
    /// The next frame; nil at the end of a finite source (replay, a scenario without --loop).
    /// Throws `CaptureError` for a lost device or a timeout.
    func nextFrame() throws -> Frame?
    func close()
    /// Asks a blocked `nextFrame()` to return nil soon (shutdown). Called from another thread.
    func interrupt()
}

extension FrameSource {
    public var isReconnectable: Bool { false }
    public func interrupt() {}
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

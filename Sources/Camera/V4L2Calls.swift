import Platform

/// The V4L2 requests ScanGate issues. Each maps to one VIDIOC_* code and one argument struct from
/// <linux/videodev2.h>, named in the comment; the argument is passed as a raw pointer to that struct.
public enum V4L2Request: Sendable, CaseIterable, CustomStringConvertible {
    /// v4l2_capability
    case queryCapability
    /// v4l2_fmtdesc
    case enumerateFormat
    /// v4l2_frmsizeenum
    case enumerateFrameSizes
    /// v4l2_frmivalenum
    case enumerateFrameIntervals
    /// v4l2_format
    case getFormat, setFormat
    /// v4l2_streamparm
    case getParameters, setParameters
    /// v4l2_requestbuffers
    case requestBuffers
    /// v4l2_buffer
    case queryBuffer, queueBuffer, dequeueBuffer
    /// Int32: the buffer type
    case streamOn, streamOff
    /// v4l2_queryctrl
    case queryControl
    /// v4l2_control
    case getControl, setControl

    /// The VIDIOC_ name, for error messages.
    public var description: String {
        switch self {
        case .queryCapability: return "VIDIOC_QUERYCAP"
        case .enumerateFormat: return "VIDIOC_ENUM_FMT"
        case .enumerateFrameSizes: return "VIDIOC_ENUM_FRAMESIZES"
        case .enumerateFrameIntervals: return "VIDIOC_ENUM_FRAMEINTERVALS"
        case .getFormat: return "VIDIOC_G_FMT"
        case .setFormat: return "VIDIOC_S_FMT"
        case .getParameters: return "VIDIOC_G_PARM"
        case .setParameters: return "VIDIOC_S_PARM"
        case .requestBuffers: return "VIDIOC_REQBUFS"
        case .queryBuffer: return "VIDIOC_QUERYBUF"
        case .queueBuffer: return "VIDIOC_QBUF"
        case .dequeueBuffer: return "VIDIOC_DQBUF"
        case .streamOn: return "VIDIOC_STREAMON"
        case .streamOff: return "VIDIOC_STREAMOFF"
        case .queryControl: return "VIDIOC_QUERYCTRL"
        case .getControl: return "VIDIOC_G_CTRL"
        case .setControl: return "VIDIOC_S_CTRL"
        }
    }
}

/// The "V4L2 calls" seam (after apple/swift-system): every raw call the camera makes, so unit tests can
/// put a scripted device behind it. Implementations retry EINTR themselves and report failures as the
/// errno; callers add the device path. The real one is `LibV4L2Calls`.
public protocol V4L2Calls: AnyObject {
    /// Opens a device node (read/write, non-blocking, close-on-exec); returns the descriptor.
    func open(_ path: String) -> Result<Int32, Errno>
    func close(_ fd: Int32) -> Result<Void, Errno>
    /// Issues `request` with `argument` pointing at the request's struct (see `V4L2Request`).
    func ioctl(_ fd: Int32, _ request: V4L2Request, _ argument: UnsafeMutableRawPointer) -> Result<Void, Errno>
    /// Maps a capture buffer read-only (the `offset` VIDIOC_QUERYBUF gave).
    func mmap(_ fd: Int32, length: Int, offset: Int64) -> Result<UnsafeRawPointer, Errno>
    func munmap(_ address: UnsafeRawPointer, length: Int) -> Result<Void, Errno>
    /// Waits up to `timeoutMilliseconds` for `events`; returns the revents, 0 on timeout.
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno>
}

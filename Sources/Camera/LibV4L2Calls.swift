#if canImport(Glibc)
import Glibc
#endif
import CShim
import CV4L2
import Platform

/// The real V4L2 calls, through libv4l2 (so libv4l's device plugins still apply) with its format
/// conversion switched off: the descriptor is opened with open(2) and handed to
/// `v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION)`. ENUM_FMT then lists only the device's native formats
/// (no emulated RGB3/YU12), S_FMT with a native format passes straight to the driver, and buffers are
/// the driver's own mmap'd memory: ScanGate takes the luma itself and decodes MJPEG to gray with
/// libturbojpeg, never through libv4lconvert's RGB path.
public final class LibV4L2Calls: V4L2Calls {
    public init() {}

    public func open(_ path: String) -> Result<Int32, Errno> {
        let raw = retryOnInterrupt { Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        guard case .success(let fd) = raw else { return raw }
        // v4l2_fd_open returns the same descriptor, or -1 when QUERYCAP fails (not a V4L2 device).
        if v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION) == -1 {
            let error = Errno.current
            _ = Glibc.close(fd)
            return .failure(error)
        }
        return .success(fd)
    }

    public func close(_ fd: Int32) -> Result<Void, Errno> {
        // Never retried on EINTR: the descriptor is released either way on Linux.
        shim_v4l2_close(fd) == 0 ? .success(()) : .failure(.current)
    }

    public func ioctl(_ fd: Int32, _ request: V4L2Request, _ argument: UnsafeMutableRawPointer) -> Result<Void, Errno> {
        let code = LibV4L2Calls.code(request)
        return retryOnInterrupt { shim_v4l2_ioctl(fd, code, argument) }.map { _ in () }
    }

    public func mmap(_ fd: Int32, length: Int, offset: Int64) -> Result<UnsafeRawPointer, Errno> {
        guard let address = shim_v4l2_mmap(nil, length, PROT_READ, MAP_SHARED, fd, offset),
              address != MAP_FAILED else { return .failure(.current) }
        return .success(UnsafeRawPointer(address))
    }

    public func munmap(_ address: UnsafeRawPointer, length: Int) -> Result<Void, Errno> {
        shim_v4l2_munmap(UnsafeMutableRawPointer(mutating: address), length) == 0 ? .success(()) : .failure(.current)
    }

    public func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        FileDescriptor(rawValue: fd).poll(events, timeoutMilliseconds: timeoutMilliseconds)
    }

    static func code(_ request: V4L2Request) -> UInt {
        switch request {
        case .queryCapability: return shim_vidioc_querycap()
        case .enumerateFormat: return shim_vidioc_enum_fmt()
        case .enumerateFrameSizes: return shim_vidioc_enum_framesizes()
        case .enumerateFrameIntervals: return shim_vidioc_enum_frameintervals()
        case .getFormat: return shim_vidioc_g_fmt()
        case .setFormat: return shim_vidioc_s_fmt()
        case .getParameters: return shim_vidioc_g_parm()
        case .setParameters: return shim_vidioc_s_parm()
        case .requestBuffers: return shim_vidioc_reqbufs()
        case .queryBuffer: return shim_vidioc_querybuf()
        case .queueBuffer: return shim_vidioc_qbuf()
        case .dequeueBuffer: return shim_vidioc_dqbuf()
        case .streamOn: return shim_vidioc_streamon()
        case .streamOff: return shim_vidioc_streamoff()
        case .queryControl: return shim_vidioc_queryctrl()
        case .getControl: return shim_vidioc_g_ctrl()
        case .setControl: return shim_vidioc_s_ctrl()
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CShim
import Platform

/// The V4L2 calls straight through libc: open(2), ioctl(2), mmap(2), munmap(2), close(2). Used instead
/// of libv4l2 when libcamera's V4L2 compatibility layer (`libcamerify`, `v4l2-compat.so` in LD_PRELOAD)
/// is loaded: it serves a libcamera camera (a Raspberry Pi camera module on its CSI connector) as a
/// V4L2 device by intercepting these libc calls, which libv4l2's raw system calls would bypass.
public final class KernelV4L2Calls: V4L2Calls {
    public init() {}

    public func open(_ path: String) -> Result<Int32, Errno> {
        retryOnInterrupt { Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
    }

    public func close(_ fd: Int32) -> Result<Void, Errno> {
        // Never retried on EINTR: the descriptor is released either way on Linux.
        Glibc.close(fd) == 0 ? .success(()) : .failure(.current)
    }

    public func ioctl(_ fd: Int32, _ request: V4L2Request, _ argument: UnsafeMutableRawPointer) -> Result<Void, Errno> {
        let code = LibV4L2Calls.code(request)
        return retryOnInterrupt { shim_ioctl(fd, code, argument) }.map { _ in () }
    }

    public func mmap(_ fd: Int32, length: Int, offset: Int64) -> Result<UnsafeRawPointer, Errno> {
        guard let address = Glibc.mmap(nil, length, PROT_READ, MAP_SHARED, fd, off_t(offset)),
              address != MAP_FAILED else { return .failure(.current) }
        return .success(UnsafeRawPointer(address))
    }

    public func munmap(_ address: UnsafeRawPointer, length: Int) -> Result<Void, Errno> {
        Glibc.munmap(UnsafeMutableRawPointer(mutating: address), length) == 0 ? .success(()) : .failure(.current)
    }

    public func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        FileDescriptor(rawValue: fd).poll(events, timeoutMilliseconds: timeoutMilliseconds)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CShim
import Platform

/// The serial system calls, gathered so unit tests can fake them (after apple/swift-system).
/// Every call returns the errno on failure; EINTR is retried inside the real implementation.
public protocol SerialSystemCalls: Sendable {
    func open(_ path: String, flags: Int32) -> Result<Int32, Errno>
    func getAttributes(_ fd: Int32) -> Result<termios, Errno>
    /// tcsetattr(TCSANOW).
    func setAttributes(_ fd: Int32, _ attributes: termios) -> Result<Void, Errno>
    /// TIOCSRS485 with SER_RS485_ENABLED | SER_RS485_RTS_ON_SEND.
    func enableRS485(_ fd: Int32) -> Result<Void, Errno>
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno>
    /// read(2) on the non-blocking descriptor: EAGAIN when nothing is waiting, 0 at hang-up.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno>
    /// tcflush(TCIFLUSH): discards bytes received but not yet read.
    func discardInput(_ fd: Int32) -> Result<Void, Errno>
    /// Returns the revents (0 on timeout).
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno>
    /// TIOCOUTQ: bytes written but not yet transmitted.
    func outputQueueLength(_ fd: Int32) -> Result<Int, Errno>
    /// tcflush(TCOFLUSH): discards bytes written but not yet transmitted.
    func discardOutput(_ fd: Int32) -> Result<Void, Errno>
    func close(_ fd: Int32) -> Result<Void, Errno>
    /// The UUCP lock file for `path` (SerialDeviceLock), taken before the port is opened.
    func lock(_ path: String) -> SerialDeviceLock.Outcome
    /// TIOCGEXCL: whether the tty is in exclusive mode already.
    func isExclusive(_ fd: Int32) -> Result<Bool, Errno>
    /// TIOCEXCL (true) or TIOCNXCL (false): further open(2)s of the tty fail with EBUSY, except those of a
    /// process with CAP_SYS_ADMIN (root): the lock file and `isExclusive` cover those.
    func setExclusive(_ fd: Int32, _ exclusive: Bool) -> Result<Void, Errno>
}

extension SerialSystemCalls {
    /// Fakes that only ever write need not read: nothing is ever received.
    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        .failure(.wouldBlock)
    }
    public func discardInput(_ fd: Int32) -> Result<Void, Errno> { .success(()) }
    /// Fakes stand for no real device: no lock file, never exclusive.
    public func lock(_ path: String) -> SerialDeviceLock.Outcome { .noDevice }
    public func isExclusive(_ fd: Int32) -> Result<Bool, Errno> { .success(false) }
    public func setExclusive(_ fd: Int32, _ exclusive: Bool) -> Result<Void, Errno> { .success(()) }
}

/// The real calls, over Glibc.
public struct GlibcSerialSystemCalls: SerialSystemCalls {
    public init() {}

    public func open(_ path: String, flags: Int32) -> Result<Int32, Errno> {
        FileDescriptor.open(path, flags).map(\.rawValue)
    }

    public func getAttributes(_ fd: Int32) -> Result<termios, Errno> {
        var attributes = termios()
        return retryOnInterrupt { tcgetattr(fd, &attributes) }.map { _ in attributes }
    }

    public func setAttributes(_ fd: Int32, _ attributes: termios) -> Result<Void, Errno> {
        var copy = attributes
        return retryOnInterrupt { tcsetattr(fd, TCSANOW, &copy) }.map { _ in () }
    }

    public func enableRS485(_ fd: Int32) -> Result<Void, Errno> {
        retryOnInterrupt { shim_enable_rs485(fd, 1) }.map { _ in () }
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        FileDescriptor(rawValue: fd).write(bytes)
    }

    public func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        FileDescriptor(rawValue: fd).poll(events, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        FileDescriptor(rawValue: fd).read(into: buffer)
    }

    public func discardInput(_ fd: Int32) -> Result<Void, Errno> {
        retryOnInterrupt { tcflush(fd, TCIFLUSH) }.map { _ in () }
    }

    public func outputQueueLength(_ fd: Int32) -> Result<Int, Errno> {
        var count: Int32 = 0
        return retryOnInterrupt { shim_ioctl_int(fd, shim_tiocoutq(), &count) }.map { _ in Int(count) }
    }

    public func discardOutput(_ fd: Int32) -> Result<Void, Errno> {
        retryOnInterrupt { tcflush(fd, TCOFLUSH) }.map { _ in () }
    }

    public func close(_ fd: Int32) -> Result<Void, Errno> {
        FileDescriptor(rawValue: fd).close()
    }

    public func lock(_ path: String) -> SerialDeviceLock.Outcome {
        SerialDeviceLock.acquire(device: path)
    }

    public func isExclusive(_ fd: Int32) -> Result<Bool, Errno> {
        var value: Int32 = 0
        return retryOnInterrupt { shim_ioctl_int(fd, shim_tiocgexcl(), &value) }.map { _ in value != 0 }
    }

    public func setExclusive(_ fd: Int32, _ exclusive: Bool) -> Result<Void, Errno> {
        var unused: Int32 = 0
        let request = UInt(exclusive ? TIOCEXCL : TIOCNXCL)
        return retryOnInterrupt { shim_ioctl_int(fd, request, &unused) }.map { _ in () }
    }
}

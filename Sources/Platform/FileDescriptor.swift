#if canImport(Glibc)
import Glibc
#endif

/// A raw file descriptor with typed, EINTR-safe operations. Does not own the descriptor:
/// the type that opened it closes it (see `OwnedFileDescriptor`).
public struct FileDescriptor: Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) -> Result<FileDescriptor, Errno> {
        retryOnInterrupt { Glibc.open(path, flags | O_CLOEXEC, mode) }.map(FileDescriptor.init(rawValue:))
    }

    public func close() -> Result<Void, Errno> {
        // close(2) must not be retried on EINTR on Linux: the descriptor is gone either way.
        Glibc.close(rawValue) == 0 ? .success(()) : .failure(.current)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retryOnInterrupt { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    public func write(_ buffer: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        retryOnInterrupt { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all bytes, looping over short writes. Blocks on a blocking descriptor.
    public func writeAll(_ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                switch write(UnsafeRawBufferPointer(rebasing: raw[offset...])) {
                case .success(let n): offset += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
    }

    /// fdatasync(2): the file's data (and the size it needs) on the disk. EINTR is retried unless
    /// `retryOnInterrupt` is false. After a failure the kernel may have dropped the dirty pages: the
    /// caller must not trust what it wrote since the last successful sync.
    public func dataSync(retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        call(retry) { Glibc.fdatasync(rawValue) }
    }

    /// fsync(2): data and metadata on the disk (a directory's entries, for a directory descriptor).
    public func sync(retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        call(retry) { Glibc.fsync(rawValue) }
    }

    /// ftruncate(2) to `length` bytes.
    public func truncate(to length: Int, retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        call(retry) { Glibc.ftruncate(rawValue, off_t(length)) }
    }

    private func call(_ retry: Bool, _ body: () -> Int32) -> Result<Void, Errno> {
        if retry { return retryOnInterrupt(body).map { _ in () } }
        return body() == 0 ? .success(()) : .failure(.current)
    }

    /// Waits for `events` (POLLIN, POLLOUT) up to `timeoutMilliseconds`; returns the revents (0 on timeout).
    public func poll(_ events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        var entry = pollfd(fd: rawValue, events: events, revents: 0)
        return retryOnInterrupt { Glibc.poll(&entry, 1, timeoutMilliseconds) }.map { $0 == 0 ? 0 : entry.revents }
    }
}

/// Owns a descriptor and closes it exactly once.
public final class OwnedFileDescriptor: @unchecked Sendable {
    public let fd: FileDescriptor
    private var closed = false

    public init(_ fd: FileDescriptor) { self.fd = fd }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = fd.close()
    }

    deinit { close() }
}

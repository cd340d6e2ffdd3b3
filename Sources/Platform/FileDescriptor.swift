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

    public func read(into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt retry: Bool = true) -> Result<Int, Errno> {
        count(retry) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    public func write(_ buffer: UnsafeRawBufferPointer, retryOnInterrupt retry: Bool = true) -> Result<Int, Errno> {
        count(retry) { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all bytes, looping over short writes. Blocks on a blocking descriptor.
    public func writeAll(_ bytes: [UInt8], retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                switch write(UnsafeRawBufferPointer(rebasing: raw[offset...]), retryOnInterrupt: retry) {
                case .success(let n): offset += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
    }

    // MARK: - At an offset (pread/pwrite: the file offset is left alone)

    /// pread(2): up to `buffer.count` bytes from byte `offset`; 0 at the end of the file.
    public func read(fromAbsoluteOffset offset: Int, into buffer: UnsafeMutableRawBufferPointer,
                     retryOnInterrupt retry: Bool = true) -> Result<Int, Errno> {
        count(retry) { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// pwrite(2): up to `buffer.count` bytes at byte `offset`.
    public func write(toAbsoluteOffset offset: Int, _ buffer: UnsafeRawBufferPointer,
                      retryOnInterrupt retry: Bool = true) -> Result<Int, Errno> {
        count(retry) { Glibc.pwrite(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// pread until `buffer` is full or the file ends: the bytes read (fewer than `buffer.count` only at
    /// the end of the file).
    public func readAll(fromAbsoluteOffset offset: Int, into buffer: UnsafeMutableRawBufferPointer,
                        retryOnInterrupt retry: Bool = true) -> Result<Int, Errno> {
        var done = 0
        while done < buffer.count {
            switch read(fromAbsoluteOffset: offset + done, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]),
                        retryOnInterrupt: retry) {
            case .success(0): return .success(done)
            case .success(let n): done += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(done)
    }

    /// Up to `count` bytes from byte `offset` (fewer only at the end of the file).
    public func readAll(fromAbsoluteOffset offset: Int, count: Int, retryOnInterrupt retry: Bool = true) -> Result<[UInt8], Errno> {
        var bytes = [UInt8](repeating: 0, count: max(0, count))
        let result = bytes.withUnsafeMutableBytes { readAll(fromAbsoluteOffset: offset, into: $0, retryOnInterrupt: retry) }
        return result.map { n in
            bytes.removeSubrange(n...)
            return bytes
        }
    }

    /// pwrite every byte of `bytes` at byte `offset`, looping over short writes.
    public func writeAll(toAbsoluteOffset offset: Int, _ bytes: [UInt8], retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                switch write(toAbsoluteOffset: offset + done, UnsafeRawBufferPointer(rebasing: raw[done...]), retryOnInterrupt: retry) {
                case .success(let n): done += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
    }

    // MARK: - Durability and size

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

    /// fstat(2).
    public func status() -> Result<stat, Errno> {
        var info = stat()
        return Glibc.fstat(rawValue, &info) == 0 ? .success(info) : .failure(.current)
    }

    // MARK: - Locks

    public enum LockKind: Sendable { case shared, exclusive }

    /// flock(2) on this open file description. Blocking (the default) waits for the lock and returns true;
    /// with `nonBlocking`, false when another open file description holds a conflicting lock. The kernel
    /// releases it when the last descriptor of this open file closes, a kill -9 included.
    public func lock(_ kind: LockKind = .exclusive, nonBlocking: Bool = false, retryOnInterrupt retry: Bool = true) -> Result<Bool, Errno> {
        let operation = (kind == .exclusive ? LOCK_EX : LOCK_SH) | (nonBlocking ? LOCK_NB : 0)
        switch call(retry, { flock(rawValue, operation) }) {
        case .success: return .success(true)
        case .failure(let e) where nonBlocking && e == .wouldBlock: return .success(false)
        case .failure(let e): return .failure(e)
        }
    }

    /// flock(LOCK_UN).
    public func unlock(retryOnInterrupt retry: Bool = true) -> Result<Void, Errno> {
        call(retry) { flock(rawValue, LOCK_UN) }
    }

    private func call(_ retry: Bool, _ body: () -> Int32) -> Result<Void, Errno> {
        if retry { return retryOnInterrupt(body).map { _ in () } }
        return body() == 0 ? .success(()) : .failure(.current)
    }

    private func count(_ retry: Bool, _ body: () -> Int) -> Result<Int, Errno> {
        if retry { return retryOnInterrupt(body) }
        let n = body()
        return n >= 0 ? .success(n) : .failure(.current)
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

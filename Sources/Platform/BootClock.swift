#if canImport(Glibc)
import Glibc
#endif

/// This boot's id: the kernel's /proc/sys/kernel/random/boot_id, a random UUID drawn at every boot.
/// Two CLOCK_BOOTTIME readings can be compared only when they carry the same boot id.
public struct BootID: Hashable, Sendable, CustomStringConvertible {
    public static let path = "/proc/sys/kernel/random/boot_id"
    /// 16 bytes.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16, bytes.contains(where: { $0 != 0 }) else { return nil }
        self.bytes = bytes
    }

    /// "a801a35c-6cb8-4d98-b732-521d7e4d10de" (the dashes and a line end are optional).
    public init?(text: String) {
        let digits = text.utf8.filter { $0 != UInt8(ascii: "-") && $0 != 0x0A }
        guard digits.count == 32, let bytes = Hex.decode(String(decoding: digits, as: UTF8.self)) else { return nil }
        self.init(bytes: bytes)
    }

    public var description: String { Hex.string(bytes, lowercase: true) }

    /// Reads this boot's id.
    public static func current(_ path: String = BootID.path) -> Result<BootID, SystemError> {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) {
        case .success(let d): fd = d
        case .failure(let e): return .failure(SystemError("open", path, e))
        }
        defer { _ = fd.close() }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n: Int
        switch buffer.withUnsafeMutableBytes({ fd.read(into: $0) }) {
        case .success(let count): n = count
        case .failure(let e): return .failure(SystemError("read", path, e))
        }
        guard let id = BootID(text: String(decoding: buffer[0..<n], as: UTF8.self)) else {
            return .failure(SystemError("parse", path, .invalidArgument))
        }
        return .success(id)
    }
}

/// CLOCK_BOOTTIME: monotonic, counts time suspended, restarts at each boot.
public enum BootTime {
    public static func nowNanoseconds() -> UInt64 {
        var ts = timespec()
        if clock_gettime(CLOCK_BOOTTIME, &ts) != 0 {
            // Only a kernel older than 2.6.39 lacks it; CLOCK_MONOTONIC is the same without suspend.
            return MonotonicInstant.now().nanoseconds
        }
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

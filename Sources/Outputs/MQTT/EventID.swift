import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Event ids: `<run>-<seq>`, e.g. `3f9c0e12a4b7d5e8-42`. `run` is 64 bits from the kernel's random
/// generator (/dev/urandom), drawn once when the MQTT output is built; `seq` is the read's number in
/// this daemon run (1, 2, ...). Unique across restarts without any clock or stored counter: a restart,
/// a reload that rebuilds the output, a wiped spool or an SD-card image cloned to a hundred kiosks
/// each get a new run value; a Pi without a battery clock may boot years off, so time is not used.
/// Two runs share a value with probability 2^-64 per pair. The id is written into the event before it
/// is spooled, so a copy sent again after a crash carries the same id and consumers drop it.
public struct EventIDs: Sendable, Equatable {
    /// 16 lower-case hex digits.
    public let run: String

    public init(run: String) { self.run = run }

    /// A new run value from the kernel's random generator (/dev/urandom, the source of getrandom(2)).
    public static func random() throws(SystemError) -> EventIDs {
        let path = "/dev/urandom"
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY) {
        case .success(let d): fd = d
        case .failure(let e): throw SystemError("open", path, e)
        }
        defer { _ = fd.close() }
        var bytes = [UInt8](repeating: 0, count: 8)
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...])) }
            switch n {
            case .success(let count) where count > 0: filled += count
            case .success: throw SystemError("read", path, .ioError)
            case .failure(let e): throw SystemError("read", path, e)
            }
        }
        return EventIDs(run: Hex.string(bytes, lowercase: true))
    }

    public func id(seq: UInt64) -> String { run + "-" + String(seq) }
}

import CShim
import Core
import Platform
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

/// When a record was spooled, by the clocks that can judge its age.
public struct SpoolStamp: Sendable, Equatable {
    /// CLOCK_REALTIME, nanoseconds since the epoch.
    public var wall: Int64
    /// The wall clock was synchronised (NTP) when the stamp was taken: only such a stamp is compared
    /// with the wall clock of another boot.
    public var wallSynchronized: Bool
    /// CLOCK_BOOTTIME, nanoseconds since `bootID`'s boot (it never steps and counts suspend).
    public var boot: UInt64
    /// nil: not known (a record of the first format, or a kernel without a boot id).
    public var bootID: BootID?

    public init(wall: Int64, wallSynchronized: Bool, boot: UInt64, bootID: BootID?) {
        self.wall = wall
        self.wallSynchronized = wallSynchronized
        self.boot = boot
        self.bootID = bootID
    }
}

/// The clocks the spool (and the command id store) stamp with and judge age by; injected in tests.
///
/// Age is judged, in this order:
/// - same boot (the stamp's boot id is this boot's): CLOCK_BOOTTIME, which no clock step moves;
/// - another boot: the wall clock, and only when the stamp was taken with a synchronised clock, the
///   clock is synchronised now and both are after 2025 (`plausibleWallClockFloor`). A forward step alone
///   (a bad battery clock, fake-hwclock before NTP) never makes a record look old.
/// - otherwise the age is unknown.
public struct SpoolClock: Sendable {
    public var wall: @Sendable () -> Int64
    public var boot: @Sendable () -> UInt64
    public var wallSynchronized: @Sendable () -> Bool
    public var bootID: BootID?

    public init(wall: @escaping @Sendable () -> Int64, boot: @escaping @Sendable () -> UInt64,
                wallSynchronized: @escaping @Sendable () -> Bool, bootID: BootID?) {
        self.wall = wall
        self.boot = boot
        self.wallSynchronized = wallSynchronized
        self.bootID = bootID
    }

    /// Wall-clock times before this (2025-01-01) mean a clock that was not set.
    public static let plausibleWallClockFloor: Int64 = 1_735_689_600 * 1_000_000_000

    /// This machine's clocks; the boot id is read once (nil when it cannot be read: age across boots is
    /// then judged by the wall clock only).
    public static func system() -> SpoolClock {
        let id = try? BootID.current().get()
        return SpoolClock(wall: { WallClock.nowNanoseconds() }, boot: { BootTime.nowNanoseconds() },
                          wallSynchronized: { WallClockSync.isSynchronized() }, bootID: id)
    }

    public func stamp() -> SpoolStamp {
        SpoolStamp(wall: wall(), wallSynchronized: wallSynchronized(), boot: boot(), bootID: bootID)
    }

    public enum Age: Equatable, Sendable {
        case known(nanoseconds: Int64)
        case unknown
    }

    /// How old `stamp` is now (see the type's rules).
    public func age(of stamp: SpoolStamp) -> Age {
        if let id = stamp.bootID, let current = bootID, id == current {
            let now = boot()
            return .known(nanoseconds: now >= stamp.boot ? Int64(clamping: now - stamp.boot) : 0)
        }
        let now = wall()
        guard stamp.wallSynchronized, stamp.wall >= SpoolClock.plausibleWallClockFloor,
              now >= SpoolClock.plausibleWallClockFloor, wallSynchronized() else { return .unknown }
        return .known(nanoseconds: max(0, now - stamp.wall))
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

/// Whether the wall clock is synchronised: the rule `timedatectl` uses (adjtimex's maximum error below
/// 16 s), or systemd-timesyncd's flag file from this boot. The same rule as the signed-pass clock check.
public enum WallClockSync {
    /// The same rule as the signed-pass check (Platform's ClockSync: adjtimex maximum error below 16 s, or
    /// systemd-timesyncd's flag file).
    public static func isSynchronized() -> Bool { ClockSync.kernel()().synchronised }
}

import CShim
import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

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

/// Whether the wall clock is synchronised: the rule `timedatectl` uses (adjtimex's maximum error below
/// 16 s), or systemd-timesyncd's flag file from this boot. The same rule as the signed-pass clock check.
public enum WallClockSync {
    /// The same rule as the signed-pass check (Platform's ClockSync: adjtimex maximum error below 16 s, or
    /// systemd-timesyncd's flag file).
    public static func isSynchronized() -> Bool { ClockSync.kernel()().synchronised }
}

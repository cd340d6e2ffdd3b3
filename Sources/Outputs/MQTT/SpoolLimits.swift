import Core
import Platform
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// How the spool is bounded.
public struct SpoolLimits: Sendable, Equatable {
    /// The bytes of records not yet delivered (headers included); beyond it the oldest are dropped.
    public var maxBytes: Int
    /// Records spooled longer ago than this are dropped. 0: no age limit.
    public var maxAgeNanoseconds: Int64
    /// A new segment file is started when the active one would grow past this.
    public var segmentBytes: Int

    public init(maxBytes: Int, maxAgeNanoseconds: Int64, segmentBytes: Int? = nil) {
        self.maxBytes = max(SpoolFiles.headerSize + 1, maxBytes)
        self.maxAgeNanoseconds = max(0, maxAgeNanoseconds)
        self.segmentBytes = segmentBytes ?? min(8 << 20, max(64 << 10, maxBytes / 16))
    }

    public init(settings: MQTTSettings) {
        self.init(maxBytes: settings.spoolMaxMB << 20,
                  maxAgeNanoseconds: Int64(settings.spoolMaxAgeHours) * 3600 * 1_000_000_000)
    }
}

/// The spool's numbers, for health, state, status and metrics.
public struct SpoolDepth: Sendable, Equatable {
    /// Records not yet acknowledged by the broker, and their bytes on disk.
    public var records: UInt64 = 0
    public var bytes: Int = 0
    /// Dropped because the spool was full (oldest first), because they were older than the age limit,
    /// because they were found damaged (when the spool was opened or read back), and because the broker
    /// refused them for good (`MQTTSession.maxRefusals` times, or too large for it).
    public var droppedFull: UInt64 = 0
    public var droppedExpired: UInt64 = 0
    public var droppedDamaged: UInt64 = 0
    public var droppedRefused: UInt64 = 0
    /// Recovered when the spool was opened (records not yet acknowledged before the last stop).
    public var recovered: UInt64 = 0

    public init() {}

    public var dropped: UInt64 { droppedFull + droppedExpired + droppedDamaged + droppedRefused }
}

/// Why the spool cannot work: the file or directory and the errno.
public struct SpoolError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The directory's lock is held by another spool (another scangate, or an MQTT output not yet gone).
    public let lockBusy: Bool
    /// The errno of the call that failed, when one did.
    public let errno: Errno?
    public init(_ message: String, lockBusy: Bool = false) {
        self.message = message
        self.lockBusy = lockBusy
        self.errno = nil
    }
    init(_ error: SystemError) {
        self.message = "mqtt-spool: " + error.description
        self.lockBusy = false
        self.errno = error.errno
    }
    /// The file system (or the quota) had no room for the write: ENOSPC, EDQUOT.
    public var noSpace: Bool { errno?.meansNoSpace ?? false }
    public var description: String { message }
}

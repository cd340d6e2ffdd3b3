import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Where a spool record starts: its segment (named by the segment's first record number), the byte
/// offset in that segment, and the record's number. Ordered by record number.
public struct SpoolPosition: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var segment: UInt64
    public var offset: Int
    public var record: UInt64

    public static func < (a: SpoolPosition, b: SpoolPosition) -> Bool { a.record < b.record }
    public var description: String { "record \(record) (segment \(SpoolFiles.segmentName(segment)) offset \(offset))" }
}

/// One event read back from the spool.
public struct SpoolRecord: Sendable {
    public let number: UInt64
    /// When it was spooled (wall clock, and the boot clock with this boot's id).
    public let stamp: SpoolStamp
    public let payload: [UInt8]
    /// The position right after this record: where reading goes on, and what `acknowledge` takes.
    public let next: SpoolPosition

    /// Wall-clock time it was spooled, nanoseconds since the epoch.
    public var spooledAt: Int64 { stamp.wall }
}

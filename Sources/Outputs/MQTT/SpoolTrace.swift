#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// A test hook for the power-cut suite (Tests/HIL/powercut): with `SCANGATE_TRACE_SPOOL=PATH` in the
/// environment, the spool thread appends `durable <event id>` to PATH for each event of a batch once the
/// batch's fdatasync has returned, so a host that powers the machine off can tell which events the spool
/// promised to keep. A line is written only after the sync, so a missing line never hides a lost event;
/// a line lost at the cut only makes the suite count that event as "read, not seen durable". A service
/// never sets it; when unset this costs one nil check per batch.
final class SpoolTrace: Sendable {
    static let variable = "SCANGATE_TRACE_SPOOL"

    private let file: OwnedFileDescriptor
    let path: String

    private init(file: OwnedFileDescriptor, path: String) {
        self.file = file
        self.path = path
    }

    /// The trace named by the environment, nil when unset; a path that cannot be opened is logged and nil.
    static func fromEnvironment(logger: Logger) -> SpoolTrace? {
        guard let raw = getenv(variable) else { return nil }
        let path = String(cString: raw)
        guard !path.isEmpty else { return nil }
        switch FileDescriptor.open(path, O_WRONLY | O_APPEND | O_CREAT, mode: 0o644) {
        case .success(let fd):
            logger.warning("\(variable)=\(path): each durable spool batch is traced there (a test hook)")
            return SpoolTrace(file: OwnedFileDescriptor(fd), path: path)
        case .failure(let e):
            logger.error("\(variable)=\(path): cannot open it (\(e)); no spool trace")
            return nil
        }
    }

    /// One `durable <id>` line per payload (events start with `{"id":"<id>"`), in one write.
    func batchSynced(_ payloads: [[UInt8]], logger: Logger) {
        var out: [UInt8] = []
        for p in payloads { out += Array("durable ".utf8) + SpoolTrace.eventID(p) + [0x0A] }
        if case .failure(let e) = file.fd.writeAll(out) {
            logger.error("\(SpoolTrace.variable)=\(path): write failed (\(e))", rateLimitKey: "spool-trace")
        }
    }

    /// The id of an event payload: the bytes of the first member's string value, or `?` when it has none.
    static func eventID(_ payload: [UInt8]) -> [UInt8] {
        let prefix = Array("{\"id\":\"".utf8)
        guard payload.starts(with: prefix) else { return Array("?".utf8) }
        let rest = payload[prefix.count...]
        guard let end = rest.firstIndex(of: 0x22) else { return Array("?".utf8) }
        return Array(rest[..<end])
    }
}

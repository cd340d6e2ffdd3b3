import Components
import Core
import Platform
import Settings

extension DoctorPart {
    public static let disk = DoctorPart("disk")
}

/// `scangate doctor`'s rows for the room left where the daemon writes: one row per directory the config
/// writes to (the replay store's, the MQTT spool, the OSDP state and key files', the metrics textfile's),
/// naming the settings that use it, its file system's free space (statvfs, as a user who is not root
/// gets it) and the mount. A file system with no room for one more block or file fails: one-time passes
/// are then refused as `replay store failed`, events dropped, a panel's new key or address not kept.
/// A directory not made yet is judged by its nearest existing parent. Nothing is written.
public enum DiskDoctor {
    /// The system calls the rows need, so tests can give a full disk (the real ones by default).
    public struct Probe: Sendable {
        public var space: @Sendable (String) -> Result<FileSystemSpace, SystemError>
        public var mount: @Sendable (String) -> MountPoint?
        public var existingDirectory: @Sendable (String) -> String

        public init(space: @escaping @Sendable (String) -> Result<FileSystemSpace, SystemError> = { FileSystemSpace.of($0) },
                    mount: @escaping @Sendable (String) -> MountPoint? = { MountPoint.containing($0) },
                    existingDirectory: @escaping @Sendable (String) -> String = { nearestExistingDirectory($0) }) {
            self.space = space
            self.mount = mount
            self.existingDirectory = existingDirectory
        }
    }

    /// The directories the daemon writes to with these settings, each with the settings that put files
    /// there, in the order first named.
    public static func directories(_ settings: RunSettings) -> [(directory: String, uses: [String])] {
        var uses: [(String, String)] = []
        let credential = settings.credential
        if credential.format != .off && credential.oneTime {
            uses.append((parent(credential.replayStore), "credential-replay-store"))
        }
        if credential.format != .off && credential.statusList != nil {
            uses.append((parent(settings.policy.stateFile), "policy-state-file"))
        }
        if settings.mqtt.enabled { uses.append((settings.mqtt.spool, "mqtt-spool")) }
        if settings.osdp.device != nil {
            uses.append((parent(settings.osdp.stateFile), "osdp-state-file"))
            if settings.osdp.secure != .off { uses.append((parent(settings.osdp.scbkFile), "osdp-scbk-file")) }
        }
        if !settings.service.metricsTextfile.isEmpty { uses.append((parent(settings.service.metricsTextfile), "metrics-textfile")) }
        var out: [(directory: String, uses: [String])] = []
        for (directory, use) in uses {
            if let i = out.firstIndex(where: { $0.directory == directory }) {
                out[i].uses.append(use)
            } else {
                out.append((directory, [use]))
            }
        }
        return out
    }

    public static func rows(_ settings: RunSettings, probe: Probe = Probe()) -> [DoctorRow] {
        directories(settings).map { row(directory: $0.directory, uses: $0.uses, probe: probe) }
    }

    static func row(directory: String, uses: [String], probe: Probe) -> DoctorRow {
        let check = "disk \(directory)"
        let existing = probe.existingDirectory(directory)
        let whose = uses.joined(separator: ", ")
        let space: FileSystemSpace
        switch probe.space(existing) {
        case .success(let s): space = s
        case .failure(let e):
            return .fail(.disk, check, "cannot tell the free space for \(whose): \(e)",
                         fix: "make \(directory) a directory the service user can reach")
        }
        let mount = probe.mount(existing)
        let on = mount.map { "on \($0)" } ?? "on its file system"
        var detail = "\(space.summary) \(on), for \(whose)"
        if existing != directory { detail += " (\(directory) does not exist yet; judged by \(existing))" }
        guard space.isFull else { return .pass(.disk, check, detail) }
        var effects: [String] = []
        if uses.contains("credential-replay-store") { effects.append("one-time passes are refused as 'replay store failed'") }
        if uses.contains("policy-state-file") { effects.append("a newer status list cannot be recorded, so run refuses to start with it") }
        if uses.contains("mqtt-spool") { effects.append("MQTT events are dropped (spool_dropped_no_space)") }
        if uses.contains(where: { $0.hasPrefix("osdp-") }) { effects.append("a panel's new address or key is not kept") }
        if uses.contains("metrics-textfile") { effects.append("the metrics file is not updated") }
        let what = space.availableBytes < space.blockSize ? "no space left" : "no inodes left"
        let full = "\(what) \(on) (\(space.summary)), for \(whose): " + effects.joined(separator: "; ")
        return .fail(.disk, check, full,
                     fix: "free space on \(mount?.directory ?? existing) (journalctl --vacuum-size=100M, old logs, core dumps), "
                        + "or move \(whose) to a file system with room")
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

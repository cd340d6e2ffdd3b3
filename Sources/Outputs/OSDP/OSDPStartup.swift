import Core
import Platform
import Settings

/// What `osdp-install-mode = yes` amounts to at start.
public enum OSDPInstallModeStatus: Equatable, Sendable {
    /// `osdp-install-mode = no`.
    case off
    /// Asked for and open: no key yet, so a panel may open the secure channel with SCBK-D and install its
    /// key with one osdp_KEYSET. The first device on the bus to do so owns the reader.
    case open
    /// Asked for but inert: a key is installed (its check value), so SCBK-D is refused and osdp_PDCAP does
    /// not offer it. `recorded`: the state file says a panel installed this very key.
    case inert(keyCheck: [UInt8], recorded: Bool)
}

/// The PD's starting point: settings, plus what the key file and the state file hold.
public struct OSDPStartup: Sendable {
    public let configuration: OSDPPeripheralConfiguration
    /// The state file as read (nil: none yet).
    public let persisted: OSDPPersistedState?
    /// One line per thing worth saying at start (for the log).
    public let notes: [String]
    /// What the settings give up, for a warning line at start (osdp-secure = optional, an open install mode).
    public let warnings: [String]
    public let installMode: OSDPInstallModeStatus

    /// What `osdp-secure = optional` gives up, for the start-up warning and doctor.
    public static let optionalGivesUp = "osdp-secure = optional: any device on the bus may talk to the reader in plain text: a plain-text COMSET moves it to another address and speed (kept across restarts) and plain-text POLLs receive the card reads; set osdp-secure = required once the panel uses the secure channel"

    /// Reads the key file (mode, owner and content checked) and the state file, and decides the
    /// address, the speed and whether install mode applies. Errors name the file or option and what to do.
    ///
    /// - The state file's address and baud (from the panel's osdp_COMSET) win over `osdp-address` and
    ///   `osdp-baud`: the panel talks to the reader where it last put it. Deleting the file returns to the
    ///   configuration.
    /// - `osdp-install-mode = yes` is open only while there is no key: with a key file present (put there
    ///   by hand or by a panel's osdp_KEYSET) SCBK-D is refused, so a restart never reopens the reader.
    /// - The state file records the check value of a key a panel installed. If that record is there but the
    ///   key file is not, start-up fails (closed) instead of falling back to install mode or plain text.
    public static func resolve(_ settings: OSDPSettings, features: OSDPReaderFeatures, firmware: [UInt8] = [0, 0, 0],
                               machineIDPath: String = "/etc/machine-id") throws(UsageError) -> OSDPStartup {
        try settings.validate()
        var notes: [String] = []
        var warnings: [String] = []
        let persisted = try OSDPPersistedState.load(settings.stateFile)
        var key: OSDPKey?
        var installStatus = OSDPInstallModeStatus.off
        if settings.secure != .off {
            key = try OSDPFiles.loadKey(settings.scbkFile)
            if key == nil, let installed = persisted?.installedKeyCheck {
                throw UsageError("osdp-scbk-file \(settings.scbkFile): does not exist, but osdp-state-file \(settings.stateFile) records that a panel installed a key (check value \(Hex.string(installed))); the reader does not fall back to install mode or plain text: restore the key file, or to enrol the reader again delete the installed-key-check line from \(settings.stateFile)")
            }
            if let key, settings.installMode {
                let check: [UInt8]
                do throws(OSDPCryptoError) {
                    let aes = try AES128()
                    check = Array(try aes.encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3))
                } catch {
                    throw UsageError("osdp: \(error)")
                }
                let recorded = persisted?.installedKeyCheck == check
                installStatus = .inert(keyCheck: check, recorded: recorded)
                notes.append(recorded
                    ? "osdp-install-mode = yes is not used: the panel already installed the key in \(settings.scbkFile) (check value \(Hex.string(check))); the default key SCBK-D is refused; delete that file to enrol the reader again"
                    : "osdp-install-mode = yes is not used: \(settings.scbkFile) holds a key (check value \(Hex.string(check))); the default key SCBK-D is refused while a key is installed; delete that file to enrol the reader again")
            } else if key == nil && settings.installMode {
                installStatus = .open
                warnings.append("osdp: install mode is open: no key in \(settings.scbkFile) yet, so the first device on the bus to open the secure channel with the default key SCBK-D and send KEYSET owns the reader; it ends for good with that KEYSET")
            }
            if key == nil && installStatus != .open {
                if settings.secure == .required {
                    throw UsageError("osdp-scbk-file \(settings.scbkFile): does not exist; osdp-secure = required needs the panel's key there (32 hex digits, chmod 600, owned by the service user), or set osdp-install-mode = yes to let the panel install one")
                }
                notes.append("osdp: no key in \(settings.scbkFile): the panel can only talk in plain text (osdp-secure = optional)")
            }
            if settings.secure == .optional {
                warnings.append("osdp: " + optionalGivesUp)
            }
        }
        var address = UInt8(settings.address)
        var baud = settings.baud
        if let stored = persisted?.address, stored != address {
            notes.append("osdp: address \(stored) from \(settings.stateFile) (set by the panel) instead of osdp-address \(address); delete the file to use the configured one")
            address = stored
        }
        if let stored = persisted?.baud, stored != baud {
            notes.append("osdp: \(stored) baud from \(settings.stateFile) (set by the panel) instead of osdp-baud \(baud); delete the file to use the configured one")
            baud = stored
        }
        let serial: UInt32
        if let configured = settings.serial { serial = configured } else { serial = try OSDPIdentity.serial(fromMachineID: machineIDPath) }
        let identity = OSDPIdentity(vendorCode: UInt32(settings.vendorCode), model: UInt8(settings.model),
                                    serial: serial, firmware: firmware)
        let configuration = OSDPPeripheralConfiguration(
            address: address, baud: baud, secure: settings.secure, installMode: installStatus == .open, key: key, identity: identity,
            features: features, offlineAfterMs: Double(settings.offlineAfterMs), readTTLMs: Double(settings.ttlMs))
        var configured = configuration
        configured.inputCount = settings.tamperLine != nil || settings.doorContactLine != nil ? 2 : 0
        configured.buildID = "scangate " + Array((firmware + [0, 0, 0]).prefix(3)).map(String.init).joined(separator: ".")
        return OSDPStartup(configuration: configured, persisted: persisted, notes: notes, warnings: warnings,
                           installMode: installStatus)
    }
}

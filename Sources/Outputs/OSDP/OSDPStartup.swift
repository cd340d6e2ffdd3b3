import Core
import Platform
import Settings

/// The PD's starting point: settings, plus what the key file and the state file hold.
public struct OSDPStartup: Sendable {
    public let configuration: OSDPPeripheralConfiguration
    /// The state file as read (nil: none yet).
    public let persisted: OSDPPersistedState?
    /// One line per thing worth saying at start (for the log).
    public let notes: [String]

    /// Reads the key file (mode, owner and content checked) and the state file, and decides the
    /// address, the speed and whether install mode applies. Errors name the file or option and what to do.
    ///
    /// - The state file's address and baud (from the panel's osdp_COMSET) win over `osdp-address` and
    ///   `osdp-baud`: the panel talks to the reader where it last put it. Deleting the file returns to the
    ///   configuration.
    /// - `osdp-install-mode = yes` is not entered again when the key file holds the key a panel installed
    ///   (the state file records its check value): a restart must not reopen the reader to SCBK-D.
    public static func resolve(_ settings: OSDPSettings, features: OSDPReaderFeatures, firmware: [UInt8] = [0, 0, 0],
                               machineIDPath: String = "/etc/machine-id") throws(UsageError) -> OSDPStartup {
        try settings.validate()
        var notes: [String] = []
        let persisted = try OSDPPersistedState.load(settings.stateFile)
        var key: OSDPKey?
        var installMode = settings.installMode
        if settings.secure != .off {
            key = try OSDPFiles.loadKey(settings.scbkFile)
            if let key, installMode, let installed = persisted?.installedKeyCheck {
                let check: [UInt8]
                do throws(OSDPCryptoError) {
                    let aes = try AES128()
                    check = Array(try aes.encryptBlock([UInt8](repeating: 0, count: 16), key: key).prefix(3))
                } catch {
                    throw UsageError("osdp: \(error)")
                }
                if check == installed {
                    installMode = false
                    notes.append("osdp-install-mode = yes is not used: the panel already installed the key in \(settings.scbkFile) (check value \(Hex.string(check))); delete that file to enrol the reader again")
                }
            }
            if key == nil && !installMode {
                if settings.secure == .required {
                    throw UsageError("osdp-scbk-file \(settings.scbkFile): does not exist; osdp-secure = required needs the panel's key there (32 hex digits, chmod 600, owned by the service user), or set osdp-install-mode = yes to let the panel install one")
                }
                notes.append("osdp: no key in \(settings.scbkFile): the panel can only talk in plain text (osdp-secure = optional)")
            }
            if installMode {
                notes.append("osdp: install mode: the panel may open the secure channel with the default key SCBK-D and install its own key (KEYSET)")
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
            address: address, baud: baud, secure: settings.secure, installMode: installMode, key: key, identity: identity,
            features: features, offlineAfterMs: Double(settings.offlineAfterMs), readTTLMs: Double(settings.ttlMs))
        return OSDPStartup(configuration: configuration, persisted: persisted, notes: notes)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Settings

/// What the PD says it is, in osdp_PDID (and, as the cUID, in osdp_CCRYPT).
public struct OSDPIdentity: Equatable, Sendable {
    /// The IEEE OUI of the vendor (24 bits).
    public var vendorCode: UInt32
    public var model: UInt8
    public var version: UInt8
    public var serial: UInt32
    /// Firmware major, minor, build.
    public var firmware: [UInt8]

    public init(vendorCode: UInt32, model: UInt8, version: UInt8 = 1, serial: UInt32, firmware: [UInt8] = [0, 0, 0]) {
        self.vendorCode = vendorCode & 0xFF_FFFF
        self.model = model
        self.version = version
        self.serial = serial
        self.firmware = Array((firmware + [0, 0, 0]).prefix(3))
    }

    /// osdp_PDID's data: vendor code (3 bytes LE), model, version, serial (4 bytes LE), firmware (3 bytes).
    var pdidData: [UInt8] {
        le(vendorCode, 3) + [model, version] + le(serial, 4) + firmware
    }

    /// The 8-byte client UID of osdp_CCRYPT: vendor code (3 bytes LE), model, serial (4 bytes LE).
    var clientUID: [UInt8] {
        le(vendorCode, 3) + [model] + le(serial, 4)
    }

    private func le(_ value: UInt32, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
    }

    /// The default serial number: 32 bits of SHA-256 over an application-specific prefix and
    /// /etc/machine-id, stable per machine. The machine ID itself is never used as is (systemd's
    /// machine-id(5) asks applications to hash it, as it is meant to stay confidential).
    public static func serial(fromMachineID path: String = "/etc/machine-id") throws(UsageError) -> UInt32 {
        let text: String
        do throws(BoundedFileError) {
            text = try OSDPFiles.readSmallFile(path, limit: 256, kind: "machine-id files")
        } catch {
            throw UsageError("osdp-serial: cannot derive the serial number from \(path) (\(error.reasonText)); set osdp-serial to a number from 0 to 4294967295")
        }
        let id = text.trimmingWhitespace()
        guard id.utf8.count == 32, Hex.decode(id) != nil else {
            throw UsageError("osdp-serial: \(path) does not hold a 32-digit machine ID; set osdp-serial to a number from 0 to 4294967295")
        }
        let digest: [UInt8]
        do throws(OSDPCryptoError) {
            digest = try OSDPDigest.sha256(Array("scangate osdp serial\n".utf8) + Array(id.lowercased().utf8))
        } catch {
            throw UsageError("osdp-serial: \(error)")
        }
        return digest.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// What the reader's feedback hardware can do (from the daemon's GPIO and beep settings), so that
/// osdp_PDCAP tells the panel the truth.
public struct OSDPReaderFeatures: Equatable, Sendable {
    public enum LEDs: Equatable, Sendable {
        /// No LED line configured.
        case none
        /// One LED (one colour) the panel can switch and time.
        case oneColor
        /// The red and green lines: red, green and amber (both lit).
        case redGreen
    }

    public var leds: LEDs
    /// A buzzer line or the ALSA beep.
    public var buzzer: Bool
    /// Outputs the panel can drive with osdp_OUT: 1 when a door relay is configured (output 0), else 0.
    public var outputs: Int

    public init(leds: LEDs, buzzer: Bool, outputs: Int = 0) {
        self.leds = leds
        self.buzzer = buzzer
        self.outputs = outputs
    }
}

/// osdp_PDCAP, built from what this PD does.
enum OSDPCapabilities {
    /// (function code, compliance level, number of items), in function-code order.
    static func entries(features: OSDPReaderFeatures, secure: OSDPSecureMode, defaultKeyAccepted: Bool,
                        receiveBuffer: Int, inputs: Int = 0) -> [(UInt8, UInt8, UInt8)] {
        var list: [(UInt8, UInt8, UInt8)] = []
        // 1: contact status monitoring: the tamper switch and the door contact, active or not (no
        // supervision of the wiring).
        if inputs > 0 { list.append((1, 1, UInt8(truncatingIfNeeded: inputs))) }
        // 2: output control (the door relay as output 0): on/off and timed commands, level 2.
        if features.outputs > 0 { list.append((2, 2, UInt8(clamping: features.outputs))) }
        // 3: card data as an array of bits (osdp_RAW), at most 1024 bits.
        list.append((3, 1, 0))
        // 4: LEDs with timed commands; red+green+amber is OSDP's "tri-color".
        switch features.leds {
        case .none: break
        case .oneColor: list.append((4, 2, 1))
        case .redGreen: list.append((4, 4, 1))
        }
        // 5: one buzzer with timed commands.
        if features.buzzer { list.append((5, 2, 1)) }
        // 6: no text display (osdp_TEXT is acknowledged and logged).
        list.append((6, 0, 0))
        // 8: CRC-16 supported (the checksum is always accepted too).
        list.append((8, 1, 0))
        // 9: AES-128 secure channel; items bit 0: the default key SCBK-D is accepted (install mode).
        if secure == .off {
            list.append((9, 0, 0))
        } else {
            list.append((9, 1, defaultKeyAccepted ? 1 : 0))
        }
        // 10: receive buffer size, LSB and MSB.
        list.append((10, UInt8(truncatingIfNeeded: receiveBuffer), UInt8(truncatingIfNeeded: receiveBuffer >> 8)))
        // 16: OSDP version 2 (SIA OSDP 2.2).
        list.append((16, 2, 0))
        return list
    }

    static func data(features: OSDPReaderFeatures, secure: OSDPSecureMode, defaultKeyAccepted: Bool,
                     receiveBuffer: Int, inputs: Int = 0) -> [UInt8] {
        entries(features: features, secure: secure, defaultKeyAccepted: defaultKeyAccepted,
                receiveBuffer: receiveBuffer, inputs: inputs).flatMap { [$0.0, $0.1, $0.2] }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}

import Components
import Credentials
import Core
import DoorRelay
import Policies
import Settings
import Feedback
import GPIO
import Serial
import SerialLine
import Sound
import MQTT
import OSDP
import Stdout
import Wiegand

/// The system-call seams the components reach their devices through: the real ones by default, fakes
/// in unit tests.
public struct DeviceSeams: Sendable {
    public var gpiod: any GpiodCalls
    public var alsa: any ALSACalls
    public var serial: any SerialSystemCalls
    /// libgpiod with bulk requests and edge events (Wiegand).
    public var gpiodBulk: any GpiodBulkCalls

    public init(gpiod: any GpiodCalls = SystemGpiodCalls(), alsa: any ALSACalls = LibASound(),
                serial: any SerialSystemCalls = GlibcSerialSystemCalls(),
                gpiodBulk: any GpiodBulkCalls = SystemGpiodCalls()) {
        self.gpiod = gpiod
        self.alsa = alsa
        self.serial = serial
        self.gpiodBulk = gpiodBulk
    }
}

/// Every source, policy, output and feedback device ScanGate has, once. Adding one is a line here plus its own module
/// (its `component`: options, factory, doctor check) and its settings in the Settings target.
public enum Catalog {
    /// `fleet`: the daemon's state and command handler for the MQTT output (none outside the daemon).
    public static func components(_ seams: DeviceSeams = DeviceSeams(), fleet: MQTTHooks = .standalone) -> [Component] {
        [
            StdoutOutput.component,
            SerialOutput.component(system: seams.serial),
            WiegandOutput.component(calls: seams.gpiodBulk),
            OSDPOutput.component(system: seams.serial, firmware: firmware, wiegandBits: wiegandBits),
            DoorRelayOutput.component(calls: seams.gpiod),
            MQTTOutput.component(hooks: fleet),
            GPIOFeedback.component(calls: seams.gpiod),
            BeepFeedback.component(calls: seams.alsa),
        ]
    }
}

extension Catalog {
    /// The checks applied to every read before any output sees it: the payload filters, then signed
    /// passes (credential-format), which load their keys and open the replay store here.
    public static func policies(_ settings: RunSettings, logger: Logger) throws -> [any ReadPolicy] {
        var policies: [any ReadPolicy] = []
        if settings.filter.isActive { policies.append(try PayloadFilter(settings: settings.filter)) }
        if settings.credential.format != .off {
            policies.append(try CredentialPolicy.make(settings: settings.credential, logger: logger))
        }
        return policies
    }

    /// Doctor's rows for the policies that have something to check on this machine: signed passes (keys,
    /// the clock, the replay store's directory). Listed here, next to `policies`, so that a new policy's
    /// doctor check is registered where the policy is.
    public static func policyDoctorRows(_ settings: RunSettings, context: DoctorContext) -> [DoctorRow] {
        CredentialDoctor.rows(settings.credential)
    }

    /// Checks every configured component's combination of options, as `run` would at start, without
    /// opening anything (doctor and check-config run it too, often as another user).
    public static func validate(_ settings: RunSettings, components: [Component] = components()) throws {
        if settings.filter.isActive { _ = try PayloadFilter(settings: settings.filter) }
        try settings.credential.validate()
        for c in components {
            if case .output(let factory) = c.role { try factory.validate(settings) }
        }
    }

    /// The one set of checks that need no device, made alike by `check-config`, `run` (before it opens
    /// anything) and `doctor`: every section's options and their combinations (`validate`), every GPIO line
    /// with one owner across the whole catalogue, and the files a policy needs loaded as `run` loads them
    /// (credential-keys: present, parseable, safe permissions). Each error names the option or file and
    /// says what is allowed. What needs the device (the camera, a serial port, GPIO lines being free, the
    /// sound card, the broker, a panel) is left to `doctor`: `deviceChecks` names those.
    public static func check(_ settings: RunSettings, components: [Component] = components()) throws {
        try validate(settings, components: components)
        try checkLineOwners(settings)
        if settings.credential.format != .off {
            do throws(KeyFileError) {
                _ = try CredentialKeySet.load(path: settings.credential.keys ?? "")
            } catch {
                throw UsageError("credential-keys " + error.description)
            }
        }
    }

    /// What `check` cannot see without the devices, for check-config to say so.
    public static func deviceChecks(_ settings: RunSettings) -> [String] {
        var checks = ["the camera (\(settings.capture.camera))"]
        if let path = settings.serial.path { checks.append("the serial port \(path)") }
        if settings.gpio.hasLines { checks.append("the LED and buzzer lines") }
        if settings.effectiveWiegand.isEnabled || settings.effectiveWiegand.hasInputs { checks.append("the Wiegand lines") }
        if settings.effectiveDoorRelay.isEnabled { checks.append("the door relay line") }
        if let path = settings.osdp.device { checks.append("the OSDP port \(path) and its panel") }
        if settings.mqtt.enabled { checks.append("the MQTT broker") }
        if settings.beep.enabled { checks.append("the sound card") }
        if settings.credential.format != .off { checks.append("the clock and the replay store's directory") }
        return checks
    }

    /// Every GPIO line named anywhere (LEDs, buzzer, status LED, Wiegand, the door relay) has one owner:
    /// two claims of one line on one chip are refused with a message naming both.
    static func checkLineOwners(_ settings: RunSettings) throws(UsageError) {
        var claims: [(chip: String, line: GPIOLineSpec, owner: String)] = []
        if let chip = settings.gpio.chip {
            for role in GPIORole.allCases {
                if let line = settings.gpio.lines[role] { claims.append((chip, line, String(role.flag.dropFirst(2)))) }
            }
        }
        let w = settings.effectiveWiegand
        if let chip = w.chip {
            let lines: [(String, GPIOLineSpec?)] = [
                (WiegandSettings.Option.d0, w.d0), (WiegandSettings.Option.d1, w.d1),
                (WiegandSettings.Option.ledInput, w.ledInput), (WiegandSettings.Option.beeperInput, w.beeperInput),
            ]
            for (option, line) in lines {
                if let line { claims.append((chip, line, option.hasPrefix("--") ? String(option.dropFirst(2)) : option)) }
            }
        }
        let r = settings.effectiveDoorRelay
        if r.isEnabled, let chip = r.chip, let line = r.line { claims.append((chip, line, DoorRelaySettings.Option.line)) }
        for (i, a) in claims.enumerated() {
            for b in claims[(i + 1)...] where a.chip.utf8.elementsEqual(b.chip.utf8) && a.line == b.line {
                throw UsageError("\(a.owner) and \(b.owner) both name line \(a.line) on \(a.chip); each GPIO line needs one owner")
            }
        }
    }

    /// The options of every section, for `--help`, the config file and check-config.
    public static var optionTable: [OptionSpec] { OptionTable.all }
}

extension Catalog {
    /// This build's version as the three bytes osdp_PDID reports (0.1.0 → [0, 1, 0]).
    public static var firmware: [UInt8] {
        let parts = version.split(separator: ".").compactMap { UInt8($0) }
        return Array((parts + [0, 0, 0]).prefix(3))
    }

    /// ScanGate's version.
    public static let version = "0.1.0"

    /// osdp-card-format = wiegand: the bits the [wiegand] section's encoder makes of a read.
    static let wiegandBits: OSDPWiegandBits = { settings in
        let encoder = WiegandEncoder(settings: settings.effectiveWiegand)
        return { event in
            switch encoder.frame(for: event) {
            case .success(let frame): return .success((1...frame.bits.count).map { frame.bits.bit($0) })
            case .failure(let refusal): return .failure(OSDPCardRefusal(refusal.reason))
            }
        }
    }
}

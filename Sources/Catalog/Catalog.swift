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

    public init(gpiod: any GpiodCalls = SystemGpiodCalls(), alsa: any ALSACalls = LibASound(),
                serial: any SerialSystemCalls = GlibcSerialSystemCalls()) {
        self.gpiod = gpiod
        self.alsa = alsa
        self.serial = serial
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
            WiegandOutput.component(calls: seams.gpiod),
            OSDPOutput.component(system: seams.serial, gpiod: seams.gpiod, firmware: firmware, wiegandBits: wiegandBits),
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
    /// - site: the site's link over MQTT (site policy documents, anti-passback uses); nil outside the daemon.
    public static func policies(_ settings: RunSettings, logger: Logger, site: SiteLink? = nil) throws -> [any ReadPolicy] {
        var policies: [any ReadPolicy] = []
        if settings.filter.isActive { policies.append(try PayloadFilter(settings: settings.filter)) }
        if settings.credential.format != .off {
            policies.append(try CredentialPolicy.make(settings: settings.credential, policy: settings.policy, logger: logger,
                                                      site: site, mqttPolicy: settings.mqtt.enabled && settings.mqtt.policy))
        }
        return policies
    }

    /// Doctor's rows for the policies that have something to check on this machine: signed passes (keys,
    /// the clock, the replay store's directory). Listed here, next to `policies`, so that a new policy's
    /// doctor check is registered where the policy is.
    public static func policyDoctorRows(_ settings: RunSettings, context: DoctorContext) -> [DoctorRow] {
        CredentialDoctor.rows(settings.credential, policy: settings.policy)
    }

    /// Checks every configured component's combination of options, as `run` would at start, without
    /// opening anything (doctor and check-config run it too, often as another user).
    public static func validate(_ settings: RunSettings, components: [Component] = components()) throws {
        try settings.decoder.validate()
        if settings.filter.isActive { _ = try PayloadFilter(settings: settings.filter) }
        try settings.credential.validate()
        try settings.policy.validate()
        if settings.mqtt.enabled && settings.mqtt.policy && settings.credential.format == .off {
            throw UsageError("mqtt-policy: a site policy decides on signed passes; set credential-format (jwt, cwt or any) or turn mqtt-policy off")
        }
        for c in components {
            if case .output(let factory) = c.role { try factory.validate(settings) }
        }
    }

    /// The one set of checks that need no device, made alike by `check-config`, `run` (before it opens
    /// anything) and `doctor`: every section's options and their combinations (`validate`), every GPIO line
    /// with one owner across the whole catalogue, and the files a policy needs loaded as `run` loads them
    /// (credential-keys: present, parseable, safe permissions; credential-status-list: present, read but not recorded). Each error names the option or file and
    /// says what is allowed. What needs the device (the camera, a serial port, GPIO lines being free, the
    /// sound card, the broker, a panel) is left to `doctor`: `deviceChecks` names those.
    /// `gpiod` resolves line names and chip names for the line-owner check (nil: compared as written).
    public static func check(_ settings: RunSettings, components: [Component] = components(),
                             gpiod: (any GpiodCalls)? = SystemGpiodCalls()) throws {
        try validate(settings, components: components)
        try checkLineOwners(settings, components: components, gpiod: gpiod)
        if settings.credential.format != .off {
            let keys: CredentialKeySet
            do throws(KeyFileError) {
                keys = try CredentialKeySet.load(path: settings.credential.keys ?? "")
            } catch {
                throw UsageError("credential-keys " + error.description)
            }
            // The status lists as run reads them, without recording anything in policy-state-file.
            if let path = settings.credential.statusList {
                _ = try StatusListSet.read(path: path, keys: try CredentialPolicy.statusListKeys(settings.credential, credentialKeys: keys),
                                           algorithms: settings.credential.algorithms,
                                           statePath: settings.policy.stateFile)
            }
            // The site policy as run reads it: policy-keys must load, the state file must parse; a policy
            // file that is missing or refused is not an error for run either (policy-stale decides).
            if let path = settings.policy.file {
                _ = try SitePolicyInForce.read(path: path, keys: try CredentialPolicy.policyKeys(settings.policy, credentialKeys: keys),
                                               algorithms: settings.credential.algorithms, statePath: settings.policy.stateFile)
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

    /// Every GPIO line any configured component names (`Component.lineClaims`: LEDs, buzzer, status LED,
    /// Wiegand D0/D1 and inputs, the door relay) has one owner: a second claim of one line on one chip is
    /// refused with a message naming both. Names and chips are resolved through `gpiod` when the chip opens.
    static func checkLineOwners(_ settings: RunSettings, components: [Component], gpiod: (any GpiodCalls)?) throws(UsageError) {
        let claims = components.flatMap { $0.lineClaims(settings) }
        if let conflict = LineOwners.conflict(claims, calls: gpiod) { throw UsageError(conflict) }
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

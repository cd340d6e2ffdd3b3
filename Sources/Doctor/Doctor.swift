#if canImport(Glibc)
import Glibc
#endif
import Camera
import Config
import Core
import Decoding
import GPIO
import Pipeline
import Serial
import Sound
import Components
import SerialLine
import Settings
import Catalog

/// The system-call seams doctor probes devices through: the real ones by default, fakes in unit tests.
public struct DoctorSystem {
    public var v4l2: any V4L2Calls
    /// The components' seams (GPIO, ALSA, serial).
    public var devices: DeviceSeams
    /// The /dev/videoN nodes present, for the fix of a missing camera.
    public var videoNodes: () -> [String]
    /// Whether /etc/scangate/scangate.conf exists (read when no --config is given, as check-config does).
    public var defaultConfigExists: () -> Bool

    public init(v4l2: any V4L2Calls = SystemV4L2.calls(), gpiod: any GpiodCalls = SystemGpiodCalls(),
                alsa: any ALSACalls = LibASound(), serial: any SerialSystemCalls = GlibcSerialSystemCalls(),
                videoNodes: @escaping () -> [String] = { CameraNodes.videoNodes() },
                defaultConfigExists: @escaping () -> Bool = { access(ConfigFile.defaultPath, F_OK) == 0 }) {
        self.v4l2 = v4l2
        self.devices = DeviceSeams(gpiod: gpiod, alsa: alsa, serial: serial)
        self.videoNodes = videoNodes
        self.defaultConfigExists = defaultConfigExists
    }

    public var gpiod: any GpiodCalls { devices.gpiod }
    public var alsa: any ALSACalls { devices.alsa }
    public var serial: any SerialSystemCalls { devices.serial }
}

/// `scangate doctor`'s core: settings in, table rows out. Each configured device is opened the way
/// `run` opens it, exercised when asked (blink, beep, test frame) and released again.
public enum Doctor {
    /// Resolves the settings exactly as `run` does (defaults, --config FILE, flags) and checks what `run`
    /// would refuse to start with. Returns the settings, or the failed config row.
    public static func resolve(configPath: String?, flags: [(OptionSpec, String)],
                               components: [Component] = Catalog.components()) -> (RunSettings?, DoctorRow) {
        let settings: RunSettings
        do {
            settings = try Configuration.resolve(configPath: configPath, flagAssignments: flags)
            try Catalog.check(settings, components: components)
            _ = try StreamDecoder.bare(settings: settings.decoder)
        } catch {
            let fix = configPath.map { "correct it in \($0) (`scangate check-config \($0)` shows the same error)" }
                ?? "correct the flag (scangate run --help lists every option and its values)"
            let message = Configuration.explain((error as? UsageError)?.message ?? "\(error)", configPath: configPath, flagAssignments: flags)
            return (nil, .fail(.config, "config", message, fix: fix))
        }
        var source = configPath.map { "defaults, then \($0)" } ?? "defaults (no --config, and no \(ConfigFile.defaultPath))"
        if !flags.isEmpty { source += ", then " + flags.map { "--\($0.0.name)" }.joined(separator: " ") }
        return (settings, .pass(.config, "config", source))
    }

    /// Probes every configured device. The camera is always probed; each component (GPIO with
    /// --gpio-chip, sound with --beep, serial with --serial, ...) when it is configured. Device logs go to
    /// `logger`; the outcome is in the rows.
    public static func check(_ settings: RunSettings, options: DoctorOptions, logger: Logger,
                             system: DoctorSystem = DoctorSystem()) -> [DoctorRow] {
        var rows = CameraDoctor(settings: settings, options: options, logger: logger, system: system).run()
        let context = DoctorContext(options: options, logger: logger)
        let components = Catalog.components(system.devices)
        // A test switch for a device that is not configured tested nothing: a failure, with how to set it up.
        for flag in components.flatMap(\.doctorFlags) where options.switches.contains(flag.name) && !flag.isConfigured(settings) {
            rows.append(.fail(DoctorPart("switches"), "--\(flag.name)", "nothing to test: its device is not configured", fix: flag.howToConfigure))
        }
        for component in components {
            rows += component.doctor(settings, context)
        }
        rows += Catalog.policyDoctorRows(settings, context: context)
        rows += DiskDoctor.rows(settings)
        return rows
    }

}

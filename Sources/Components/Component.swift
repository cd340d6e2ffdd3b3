import Core
import Platform
import Settings

/// How one output or feedback device plugs into the daemon, registered in one place (its own module's
/// `component`, listed once in the catalog): its settings section and options, how it is built, and its
/// doctor check. The daemon, `check-config`, `doctor` and `--help` all work from these entries.
public struct Component: Sendable {
    public enum Role: Sendable {
        /// An output the daemon owns for its whole life (stdout, serial, Wiegand, OSDP, MQTT).
        case output(OutputFactory)
        /// A feedback device the feedback hub plays on (GPIO LEDs and buzzer, the ALSA beep).
        case feedback(FeedbackFactory)
    }

    /// "serial": the output's name, its doctor rows' part.
    public let name: String
    /// The `[section]` options that configure it (they also appear in the full option table).
    public let options: [OptionSpec]
    public let role: Role
    /// Doctor's switches this component acts on (`--test-frame`).
    public let doctorFlags: [DoctorFlag]
    /// Doctor's rows for it: none when it is not configured.
    public let doctor: @Sendable (RunSettings, DoctorContext) -> [DoctorRow]
    /// The GPIO lines it would request with these settings (none when it is not configured), for the
    /// one check that every line has one owner across the catalogue.
    public let lineClaims: @Sendable (RunSettings) -> [GPIOLineClaim]

    public init(name: String, options: [OptionSpec], role: Role, doctorFlags: [DoctorFlag] = [],
                lineClaims: @escaping @Sendable (RunSettings) -> [GPIOLineClaim] = { _ in [] },
                doctor: @escaping @Sendable (RunSettings, DoctorContext) -> [DoctorRow]) {
        self.name = name
        self.options = options
        self.role = role
        self.doctorFlags = doctorFlags
        self.lineClaims = lineClaims
        self.doctor = doctor
    }
}

/// Builds an output from the settings.
public struct OutputFactory: Sendable {
    /// True when the settings ask for this output at all.
    public let isConfigured: @Sendable (RunSettings) -> Bool
    /// True when `a` and `b` configure it the same way: a reload then keeps the running output, with its
    /// port, session or line request.
    public let sameSettings: @Sendable (RunSettings, RunSettings) -> Bool
    /// Checks the combination of its options; `run`, `check-config` and `doctor` refuse what this refuses.
    public let validate: @Sendable (RunSettings) throws -> Void
    /// Builds it (it opens its device in the background and retries; only bad settings throw).
    public let make: @Sendable (RunSettings, OutputContext) throws -> any Output

    public init<S: SettingsSection>(section: KeyPath<RunSettings, S> & Sendable,
                                    isConfigured: @escaping @Sendable (S) -> Bool,
                                    validate: @escaping @Sendable (S) throws -> Void = { _ in },
                                    make: @escaping @Sendable (RunSettings, OutputContext) throws -> any Output) {
        self.isConfigured = { isConfigured($0[keyPath: section]) }
        self.sameSettings = { $0[keyPath: section] == $1[keyPath: section] }
        self.validate = { settings in
            guard isConfigured(settings[keyPath: section]) else { return }
            try validate(settings[keyPath: section])
        }
        self.make = make
    }

    public init(isConfigured: @escaping @Sendable (RunSettings) -> Bool,
                sameSettings: @escaping @Sendable (RunSettings, RunSettings) -> Bool,
                validate: @escaping @Sendable (RunSettings) throws -> Void,
                make: @escaping @Sendable (RunSettings, OutputContext) throws -> any Output) {
        self.isConfigured = isConfigured
        self.sameSettings = sameSettings
        self.validate = validate
        self.make = make
    }
}

/// Builds a feedback device from the settings.
public struct FeedbackFactory: Sendable {
    public let sameSettings: @Sendable (RunSettings, RunSettings) -> Bool
    /// nil when the settings configure no such device.
    public let make: @Sendable (RunSettings, Logger) -> (any FeedbackDevice)?

    public init<S: SettingsSection>(section: KeyPath<RunSettings, S> & Sendable,
                                    make: @escaping @Sendable (S, Logger) -> (any FeedbackDevice)?) {
        self.sameSettings = { $0[keyPath: section] == $1[keyPath: section] }
        self.make = { make($0[keyPath: section], $1) }
    }
}

/// What a doctor check gets besides the settings.
public struct DoctorContext: Sendable {
    public let options: DoctorOptions
    /// Device logs (stderr only with --log-level debug).
    public let logger: Logger

    public init(options: DoctorOptions, logger: Logger) {
        self.options = options
        self.logger = logger
    }
}

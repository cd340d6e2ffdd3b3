import Core

/// What the user chose for LEDs and buzzer (the `[gpio]` section). nil chip: no GPIO feedback.
/// Times are milliseconds. Runtime state (open chip, line requests, the running pattern) lives in
/// `GPIOOutputs` and `FeedbackTimelinePlayer`, never here.
public struct GPIOSettings: SettingsSection {
    /// `--gpio-chip`: a label (pinctrl-rp1, pinctrl-bcm2711), a name (gpiochip0) or a path (/dev/gpiochip0).
    public var chip: String? = nil
    /// The line of each role (`--led-green`, `--led-red`, `--status-led`, `--buzzer`); absent roles are unused.
    public var lines: [GPIORole: GPIOLineSpec] = [:]
    /// `--gpio-active-low`: roles whose line is active when low (requested with the active-low flag).
    public var activeLow: Set<GPIORole> = []

    /// Good read: green LED on for this long (`--good-led-ms`).
    public var goodLedMs: Int = 800
    /// Good read: one buzz this long at the start (`--good-buzz-ms`, 0: silent).
    public var goodBuzzMs: Int = 100
    /// Rejected code / error: number of red blinks, each with a short buzz (`--error-blinks`).
    public var errorBlinks: Int = 2
    /// Rejected / error: red on for this long per blink, then off as long (`--error-blink-ms`).
    public var errorBlinkMs: Int = 150
    /// Rejected / error: buzz this long at the start of each blink (`--error-buzz-ms`, 0: silent).
    public var errorBuzzMs: Int = 60
    /// Scanning: status LED on this long (`--heartbeat-ms`) ...
    public var heartbeatMs: Int = 100
    /// ... once every this long (`--heartbeat-period-ms`).
    public var heartbeatPeriodMs: Int = 2000
    /// Camera lost: status LED blinks fast, on and off this long each (`--camera-lost-blink-ms`).
    public var cameraLostBlinkMs: Int = 125
    /// Controller offline (an OSDP panel stopped polling): status LED blinks slowly, on and off this long each.
    public var controllerOfflineBlinkMs: Int = 500
    /// `feedback = controller`: the buzz that says "read" while the controller decides (0: silent).
    public var cueBuzzMs: Int = 40
    /// A chip or line that could not be opened is tried again this often (`--gpio-retry-ms`).
    public var retryMs: Int = 5000

    public init() {}

    /// True when any line is configured.
    public var hasLines: Bool { !lines.isEmpty }
}

extension RunSettings {
    public var gpio: GPIOSettings {
        get { self[GPIOSettings.self] }
        set { self[GPIOSettings.self] = newValue }
    }
}

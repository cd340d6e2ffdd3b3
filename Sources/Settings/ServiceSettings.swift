import Core

/// How the daemon runs as a service (the `[service]` section).
public struct ServiceSettings: SettingsSection {
    /// After SIGTERM or SIGINT the daemon drives every output inactive and exits within this bound,
    /// even when a thread is stuck in a blocking call (`stop-timeout-ms`; keep it below the unit's
    /// TimeoutStopSec=).
    public var stopTimeoutMs: Int = 3000

    public init() {}
}

extension RunSettings {
    public var service: ServiceSettings {
        get { self[ServiceSettings.self] }
        set { self[ServiceSettings.self] = newValue }
    }
}

import Core

/// How the daemon runs as a service (the `[service]` section).
public struct ServiceSettings: SettingsSection {
    /// After SIGTERM or SIGINT the daemon drives every output inactive and exits within this bound,
    /// even when a thread is stuck in a blocking call (`stop-timeout-ms`; keep it below the unit's
    /// TimeoutStopSec=).
    public var stopTimeoutMs: Int = 3000
    /// `status-socket`: where `scangate status` asks the running daemon. `auto`: status.sock in
    /// $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else /run/scangate/status.sock; `off`: none.
    /// It also names the daemon: `run` holds an flock on `SOCKET.lock` (the default's with `off`), so one
    /// daemon runs per socket (Service/DaemonLock).
    public var statusSocket: String = "auto"
    /// `metrics-textfile`: the Prometheus node exporter's textfile-collector file (`.prom`), written
    /// atomically every `metrics-interval-s`; empty: no metrics file.
    public var metricsTextfile: String = ""
    public var metricsIntervalSeconds: Int = 5

    public init() {}
}

extension RunSettings {
    public var service: ServiceSettings {
        get { self[ServiceSettings.self] }
        set { self[ServiceSettings.self] = newValue }
    }
}

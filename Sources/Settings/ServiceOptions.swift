import Core

extension OptionTable {
    public static let service: [OptionSpec] = [
        OptionSpec("log-level", .service, .value(placeholder: "LEVEL"), default: "info",
                   help: "stderr log level: error, warning, notice, info, debug",
                   apply: { s, v in
                       guard let l = LogLevel(name: v.trimmingSpaces) else {
                           throw OptionValueError("'\(v)' is not one of error, warning, notice, info, debug")
                       }
                       s.logLevel = l
                   },
                   show: { $0.logLevel.name }),
        OptionSpec("stop-timeout-ms", .service, .value(placeholder: "MS"), default: "3000",
                   help: "after SIGTERM/SIGINT, drive every output inactive and exit within this time, even if a thread is stuck (below the unit's TimeoutStopSec)",
                   apply: { s, v in s.service.stopTimeoutMs = try ParseValue.int(v, in: 200...60_000) },
                   show: { String($0.service.stopTimeoutMs) }),
        OptionSpec("status-socket", .service, .value(placeholder: "PATH"), default: "auto",
                   help: "the Unix socket scangate status asks: auto ($RUNTIME_DIRECTORY/status.sock, else /run/scangate/status.sock), off, or a path",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       guard !t.isEmpty else { throw OptionValueError("is empty; give auto, off or a path") }
                       guard t == "auto" || t == "off" || t.hasPrefix("/") else {
                           throw OptionValueError("'\(v)' is not auto, off or an absolute path")
                       }
                       s.service.statusSocket = t
                   },
                   show: { $0.service.statusSocket }),
        OptionSpec("metrics-textfile", .service, .value(placeholder: "PATH"), default: "",
                   help: "write Prometheus metrics for the node exporter's textfile collector to this .prom file (under the unit: /var/lib/scangate/metrics/scangate.prom, symlinked from /var/lib/prometheus/node-exporter/); unset: none",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       guard t.isEmpty || (t.hasPrefix("/") && t.hasSuffix(".prom")) else {
                           throw OptionValueError("'\(v)' must be an absolute path ending in .prom (the collector reads only *.prom)")
                       }
                       s.service.metricsTextfile = t
                   },
                   show: { $0.service.metricsTextfile }),
        OptionSpec("metrics-interval-s", .service, .value(placeholder: "S"), default: "5",
                   help: "how often the metrics file is written, 1-300 seconds",
                   apply: { s, v in s.service.metricsIntervalSeconds = try ParseValue.int(v, in: 1...300) },
                   show: { String($0.service.metricsIntervalSeconds) }),
    ]
}

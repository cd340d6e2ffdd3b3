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
    ]
}

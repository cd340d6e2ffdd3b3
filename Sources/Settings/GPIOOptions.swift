import Core

extension OptionTable {
    public static let gpio: [OptionSpec] = [
        OptionSpec("gpio-chip", .gpio, .value(placeholder: "LABEL|NAME|PATH"), default: "",
                   help: "GPIO chip for LEDs and buzzer, by label (pinctrl-rp1 on a Pi 5, pinctrl-bcm2711 on a Pi 4), name (gpiochip0) or path; unset: no GPIO",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.gpio.chip = t.isEmpty ? nil : t
                   },
                   show: { $0.gpio.chip ?? "" }),
        lineOption("led-green", .green, "green LED line (good read): an offset (17) or a line name (GPIO17)"),
        lineOption("led-red", .red, "red LED line (rejected code): an offset or a line name"),
        lineOption("status-led", .status, "status LED line (heartbeat while scanning, fast blink when the camera is lost, slow blink when the controller is offline, off when paused): an offset or a line name"),
        lineOption("buzzer", .buzzer, "buzzer line (driven on/off, e.g. an active buzzer through a transistor): an offset or a line name"),
        OptionSpec("gpio-active-low", .gpio, .value(placeholder: "LIST"), default: "",
                   help: "roles whose line is active when low, comma-separated: green,red,status,buzzer",
                   apply: { s, v in
                       var roles: Set<GPIORole> = []
                       for item in ParseValue.list(v) {
                           guard let role = GPIORole(name: item) else {
                               throw OptionValueError("'\(item)' is not one of green, red, status, buzzer")
                           }
                           roles.insert(role)
                       }
                       s.gpio.activeLow = roles
                   },
                   show: { s in GPIORole.allCases.filter { s.gpio.activeLow.contains($0) }.map(\.rawValue).joined(separator: ",") }),
        msOption("good-led-ms", default: 800, 0...60000, "good read: green LED on for this long (0: not lit)",
                 \.goodLedMs),
        msOption("good-buzz-ms", default: 100, 0...10000, "good read: one buzz this long (0: silent)", \.goodBuzzMs),
        OptionSpec("error-blinks", .gpio, .value(placeholder: "N"), default: "2",
                   help: "rejected code: red LED blinks this many times, each with a short buzz (0: no feedback)",
                   apply: { s, v in s.gpio.errorBlinks = try ParseValue.int(v, in: 0...20) },
                   show: { String($0.gpio.errorBlinks) }),
        msOption("error-blink-ms", default: 150, 10...5000, "rejected code: red on this long per blink, then off as long",
                 \.errorBlinkMs),
        msOption("error-buzz-ms", default: 60, 0...5000,
                 "rejected code: buzz this long at the start of each blink (at most error-blink-ms; 0: silent)",
                 \.errorBuzzMs),
        msOption("heartbeat-ms", default: 100, 0...60000, "scanning: the status LED's heartbeat flash lasts this long (0: status LED off while scanning)",
                 \.heartbeatMs),
        msOption("heartbeat-period-ms", default: 2000, 100...600000, "scanning: one heartbeat flash every this long", \.heartbeatPeriodMs),
        msOption("camera-lost-blink-ms", default: 125, 20...5000,
                 "camera lost: status LED blinks fast, on and off this long each", \.cameraLostBlinkMs),
        msOption("controller-offline-blink-ms", default: 500, 20...5000,
                 "controller offline (an OSDP panel stopped polling): status LED blinks slowly, on and off this long each",
                 \.controllerOfflineBlinkMs),
        msOption("cue-buzz-ms", default: 40, 0...1000,
                 "with feedback controller: the read cue's buzz on each read (0: silent)", \.cueBuzzMs),
        msOption("gpio-retry-ms", default: 5000, 100...600000,
                 "an LED or buzzer GPIO chip or line that cannot be opened (missing, busy) is tried again this often; scanning goes on (Wiegand and door-relay lines: every 5 s)",
                 \.retryMs),
    ]

    private static func lineOption(_ name: String, _ role: GPIORole, _ help: String) -> OptionSpec {
        OptionSpec(name, .gpio, .value(placeholder: "LINE"), default: "", help: help,
                   apply: { s, v in
                       if v.trimmingSpaces.isEmpty { s.gpio.lines[role] = nil; return }
                       guard let spec = GPIOLineSpec.parse(v) else {
                           throw OptionValueError("'\(v)' is not a line offset (0-65535) or a line name like GPIO17")
                       }
                       s.gpio.lines[role] = spec
                   },
                   show: { $0.gpio.lines[role]?.description ?? "" })
    }

    private static func msOption(_ name: String, default value: Int, _ range: ClosedRange<Int>, _ help: String,
                                 _ key: WritableKeyPath<GPIOSettings, Int> & Sendable) -> OptionSpec {
        OptionSpec(name, .gpio, .value(placeholder: "MS"), default: String(value), help: help,
                   apply: { s, v in s.gpio[keyPath: key] = try ParseValue.int(v, in: range) },
                   show: { String($0.gpio[keyPath: key]) })
    }
}

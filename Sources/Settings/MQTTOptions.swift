import Core

extension ConfigSection {
    public static let mqtt = ConfigSection("mqtt")
}

extension OptionTable {
    /// `[mqtt]`: events and state to the fleet's broker, commands from it.
    public static let mqtt: [OptionSpec] = [
        text("mqtt-host", "HOST", "", "the broker's host name or address; unset: no MQTT", \.host),
        OptionSpec("mqtt-port", .mqtt, .value(placeholder: "N"), default: "",
                   help: "the broker's port; unset: 1883, or 8883 with TLS (mqtt-tls-ca)",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.mqtt.port = t.isEmpty ? nil : try ParseValue.int(t, in: MQTTSettings.portRange)
                   },
                   show: { $0.mqtt.port.map(String.init) ?? "" }),
        text("mqtt-client-id", "ID", "", "the client id and the events' kiosk name; unset: the host name", \.clientID),
        text("mqtt-topic-prefix", "TOPIC", "", "the topics' prefix; unset: scangate/<client-id>", \.topicPrefix),
        text("mqtt-username", "NAME", "", "the user name sent to the broker; unset: none (a client certificate can name the kiosk)", \.username),
        text("mqtt-password-file", "PATH", "", "a file holding the password (mode 0600, owned by the service user); never logged", \.passwordFile),
        text("mqtt-tls-ca", "PATH|system", "", "the CA that signed the broker's certificate (or system): turns TLS on and checks the broker's host name", \.tlsCA),
        text("mqtt-tls-cert", "PATH", "", "this kiosk's client certificate (with mqtt-tls-key)", \.tlsCert),
        text("mqtt-tls-key", "PATH", "", "the client certificate's key (mode 0600)", \.tlsKey),
        number("mqtt-keepalive-s", "30", MQTTSettings.keepaliveRange, "MQTT keepalive; the broker publishes offline (the will) after 1.5 times this in silence", \.keepaliveSeconds),
        number("mqtt-state-interval-s", "60", MQTTSettings.stateIntervalRange, "the retained state is published on change and at least this often", \.stateIntervalSeconds),
        flag("mqtt-commands", "act on <prefix>/cmd/<name> (pause, resume, reload, feedback, beep), each with an id and an expiry", \.commands),
        text("mqtt-spool", "DIR", "/var/lib/scangate/mqtt-spool", "events the broker has not acknowledged are kept here (survives a restart and a power cut)", \.spool),
        number("mqtt-spool-max-mb", "64", MQTTSettings.spoolMaxMBRange, "when the spool holds this much, the oldest events go first (counted, logged)", \.spoolMaxMB),
        number("mqtt-spool-max-age-h", "168", MQTTSettings.spoolMaxAgeRange, "events spooled longer ago than this are dropped (counted, logged)", \.spoolMaxAgeHours),
        flag("mqtt-policy", "take signed site policy documents from <prefix>/policy (and <site>/policy), verified as policy-file is; results on <prefix>/policy/result", \.policy),
        text("mqtt-site-topic", "TOPIC", "", "the site's topics: <site>/policy and <site>/passback (anti-passback uses shared by the site's kiosks); unset: none", \.siteTopic),
        flag("mqtt-homeassistant", "publish Home Assistant discovery config: a tag scanner, sensors and a connectivity sensor per kiosk", \.homeAssistant),
    ]

    private static func text(_ name: String, _ placeholder: String, _ defaultText: String, _ help: String,
                             _ key: WritableKeyPath<MQTTSettings, String> & Sendable) -> OptionSpec {
        OptionSpec(name, .mqtt, .value(placeholder: placeholder), default: defaultText, help: help,
                   apply: { s, v in s.mqtt[keyPath: key] = v.trimmingSpaces },
                   show: { $0.mqtt[keyPath: key] })
    }

    private static func number(_ name: String, _ defaultText: String, _ range: ClosedRange<Int>, _ help: String,
                               _ key: WritableKeyPath<MQTTSettings, Int> & Sendable) -> OptionSpec {
        OptionSpec(name, .mqtt, .value(placeholder: "N"), default: defaultText,
                   help: help + " (\(range.lowerBound)-\(range.upperBound))",
                   apply: { s, v in s.mqtt[keyPath: key] = try ParseValue.int(v, in: range) },
                   show: { String($0.mqtt[keyPath: key]) })
    }

    private static func flag(_ name: String, _ help: String, _ key: WritableKeyPath<MQTTSettings, Bool> & Sendable) -> OptionSpec {
        OptionSpec(name, .mqtt, .flag, default: "false", help: help,
                   apply: { s, v in s.mqtt[keyPath: key] = try ParseValue.bool(v) },
                   show: { String($0.mqtt[keyPath: key]) })
    }
}

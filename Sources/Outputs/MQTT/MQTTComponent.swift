import Components
import Core
import Platform
import Settings

extension DoctorPart {
    public static let mqtt = DoctorPart("mqtt")
}

/// What the daemon gives the MQTT output beyond the output context: its state for `<prefix>/state`, and
/// who carries out pause, resume and reload. Outside the daemon (doctor, check-config) there is none.
public struct FleetHooks: Sendable {
    public var state: @Sendable () -> FleetState
    public var commands: (any MQTTCommandHandler)?

    public init(state: @escaping @Sendable () -> FleetState, commands: (any MQTTCommandHandler)?) {
        self.state = state
        self.commands = commands
    }

    public static let standalone = FleetHooks(
        state: { FleetState(status: .starting, version: "", uptimeSeconds: 0) }, commands: nil)
}

/// The process's libmosquitto set-up, made on first use and kept while any MQTT output holds it.
final class SharedMosquitto: Sendable {
    private let library = PosixMutex<MosquittoLibrary?>(nil)
    func get() throws -> MosquittoLibrary {
        try library.withLock { l in
            if let l { return l }
            let made = try MosquittoLibrary()
            l = made
            return made
        }
    }
}

extension MQTTOutput {
    /// The `[mqtt]` report output: events, status and state to the fleet's broker, commands from it.
    public static func component(hooks: FleetHooks = .standalone) -> Component {
        let library = SharedMosquitto()
        return Component(
            name: "mqtt", options: OptionTable.mqtt,
            role: .output(OutputFactory(
                section: \.mqtt, isConfigured: { $0.enabled }, validate: { try $0.validate() },
                make: { settings, context in
                    let configuration = try settings.mqtt.resolve(hostName: MQTTSettings.systemHostName())
                    return try MQTTOutput(configuration: configuration, dependencies: MQTTOutputDependencies(
                        library: try library.get(), eventLine: EventLine.json, state: hooks.state,
                        commands: hooks.commands, feedback: context.feedback, logger: context.logger))
                })),
            doctor: { settings, context in
                guard settings.mqtt.enabled else { return [] }
                return doctorRows(settings.mqtt, library: library)
            })
    }

    /// Doctor's rows: the settings and files (password, key permissions, the client certificate's
    /// dates), then one connection as `<client-id>-doctor`, without a will.
    static func doctorRows(_ settings: MQTTSettings, library: SharedMosquitto) -> [DoctorRow] {
        let configuration: MQTTConfiguration
        do throws(UsageError) {
            configuration = try settings.resolve(hostName: MQTTSettings.systemHostName())
        } catch {
            return [.fail(.mqtt, "mqtt settings", error.message, fix: "correct the option or file it names"),
                    .skip(.mqtt, "mqtt broker", "not tried: mqtt settings failed")]
        }
        var rows = [DoctorRow.pass(.mqtt, "mqtt settings", "\(configuration)")]
        if !settings.tlsCert.isEmpty, let problem = CertificateValidity.diagnose(settings.tlsCert) {
            rows.append(.fail(.mqtt, "mqtt certificate", problem, fix: "renew the client certificate"))
        }
        let lib: MosquittoLibrary
        do {
            lib = try library.get()
        } catch {
            rows.append(.fail(.mqtt, "mqtt broker", "\(error)", fix: "reinstall libmosquitto1"))
            return rows
        }
        switch MQTTProbe.check(configuration, library: lib) {
        case .connected(let detail):
            rows.append(.pass(.mqtt, "mqtt broker", detail))
        case .failed(let why):
            rows.append(.fail(.mqtt, "mqtt broker", why, fix: Self.fix(why, settings: settings)))
        }
        return rows
    }

    private static func fix(_ why: String, settings: MQTTSettings) -> String {
        if why.contains("certificate verify failed") {
            return "mqtt-tls-ca must be the CA that signed the broker's certificate, and mqtt-host the name in it"
        }
        if why.contains("refused") || why.contains("not authorised") || why.contains("Not authorized") {
            return "the broker refused the kiosk: check mqtt-username and mqtt-password-file, or its client certificate, and the broker's ACL"
        }
        return "check that the broker runs on \(settings.host):\(settings.effectivePort), the network and firewall, and that the service may reach it (see the network drop-in in README)"
    }
}

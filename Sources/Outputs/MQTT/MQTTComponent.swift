import Components
import Core
import Platform
import Settings

extension DoctorPart {
    public static let mqtt = DoctorPart("mqtt")
}

/// What the daemon gives the MQTT output beyond the output context: its state for `<prefix>/state`, and
/// who carries out pause, resume and reload. Outside the daemon (doctor, check-config) there is none.
public struct MQTTHooks: Sendable {
    public var state: @Sendable () -> MQTTState
    public var commands: (any MQTTCommandHandler)?
    /// The site's link: site policy documents (mqtt-policy) and anti-passback uses (mqtt-site-topic).
    public var site: SiteLink?

    public init(state: @escaping @Sendable () -> MQTTState, commands: (any MQTTCommandHandler)?, site: SiteLink? = nil) {
        self.state = state
        self.commands = commands
        self.site = site
    }

    public static let standalone = MQTTHooks(
        state: { MQTTState(status: .starting, version: "", uptimeSeconds: 0) }, commands: nil)
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
    public static func component(hooks: MQTTHooks = .standalone) -> Component {
        let library = SharedMosquitto()
        return Component(
            name: "mqtt", options: OptionTable.mqtt,
            role: .output(OutputFactory(
                section: \.mqtt, isConfigured: { $0.enabled }, validate: { try $0.validate() },
                make: { settings, context in
                    let configuration = try settings.mqtt.resolve(hostName: MQTTSettings.systemHostName())
                    var dependencies = MQTTOutputDependencies(
                        library: try library.get(), eventLine: EventLine.json, state: hooks.state,
                        commands: hooks.commands, feedback: context.feedback, logger: context.logger)
                    dependencies.site = hooks.site
                    return try MQTTOutput(configuration: configuration, dependencies: dependencies)
                })),
            doctor: { settings, context in
                guard settings.mqtt.enabled else { return [] }
                return doctorRows(settings.mqtt, library: library)
            })
    }
}

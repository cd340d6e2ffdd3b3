import Components
import Core
import Platform
import Settings

extension MQTTOutput {
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

import Core

/// Home Assistant MQTT discovery (`mqtt-homeassistant = yes`): retained config messages on
/// `homeassistant/<component>/<node_id>/<object_id>/config`, published on each connection, so a site
/// running Home Assistant sees each kiosk without YAML. Per Home Assistant's documentation, node_id and
/// object_id consist of `[a-zA-Z0-9_-]` only (the client id's other characters become `_`), the tag
/// scanner needs `topic` and `device`, and the sensors use `state_topic` and an availability topic.
///
/// Entities of one kiosk (one device, identified as `scangate_<node_id>`):
/// - `tag/<node>/read`: a tag scanner fed by `<prefix>/event`; the tag id is the payload text
///   (`data`, or `data_base64` for a binary payload);
/// - `sensor/<node>/last_read`: the last payload (at most 255 characters, Home Assistant's state
///   limit), with the whole event as attributes;
/// - `sensor/<node>/status`: the daemon status from `<prefix>/state`;
/// - `binary_sensor/<node>/online`: connectivity, from the retained `<prefix>/status`.
public enum HomeAssistantDiscovery {
    public static let prefix = "homeassistant"

    /// The node id for a client id: characters outside `[a-zA-Z0-9_-]` replaced by `_`.
    public static func nodeID(_ clientID: String) -> String {
        String(String.UnicodeScalarView(clientID.unicodeScalars.map { s in
            let v = s.value
            let ok = (0x30...0x39).contains(v) || (0x41...0x5A).contains(v) || (0x61...0x7A).contains(v) || v == 0x5F || v == 0x2D
            return ok ? s : "_"
        }))
    }

    /// (topic, retained JSON payload) for each entity.
    public static func messages(clientID: String, topics: MQTTTopics, version: String) -> [(topic: String, payload: String)] {
        let node = nodeID(clientID)
        let device = JSONText.object([
            ("identifiers", "[" + JSONText.string("scangate_" + node) + "]"),
            ("name", JSONText.string("ScanGate " + clientID)),
            ("manufacturer", JSONText.string("ScanGate")),
            ("model", JSONText.string("QR/barcode kiosk reader")),
            ("sw_version", JSONText.string(version)),
        ])
        let availability: [(String, String)] = [
            ("availability_topic", JSONText.string(topics.status)),
            ("payload_available", JSONText.string("online")),
            ("payload_not_available", JSONText.string("offline")),
        ]
        let payloadText = "{{ value_json.data if value_json.data is defined else value_json.data_base64 }}"
        func topic(_ component: String, _ object: String) -> String { "\(prefix)/\(component)/\(node)/\(object)/config" }
        return [
            (topic("tag", "read"), JSONText.object([
                ("topic", JSONText.string(topics.event)),
                ("value_template", JSONText.string(payloadText)),
                ("device", device),
            ])),
            (topic("sensor", "last_read"), JSONText.object([
                ("name", JSONText.string("Last read")),
                ("unique_id", JSONText.string("scangate_\(node)_last_read")),
                ("state_topic", JSONText.string(topics.event)),
                ("value_template", JSONText.string("{{ (value_json.data if value_json.data is defined else value_json.data_base64)[:255] }}")),
                ("json_attributes_topic", JSONText.string(topics.event)),
                ("icon", JSONText.string("mdi:qrcode-scan")),
            ] + availability + [("device", device)])),
            (topic("sensor", "status"), JSONText.object([
                ("name", JSONText.string("Status")),
                ("unique_id", JSONText.string("scangate_\(node)_status")),
                ("state_topic", JSONText.string(topics.state)),
                ("value_template", JSONText.string("{{ value_json.status }}")),
                ("json_attributes_topic", JSONText.string(topics.state)),
            ] + availability + [("device", device)])),
            (topic("binary_sensor", "online"), JSONText.object([
                ("name", JSONText.string("Online")),
                ("unique_id", JSONText.string("scangate_\(node)_online")),
                ("state_topic", JSONText.string(topics.status)),
                ("payload_on", JSONText.string("online")),
                ("payload_off", JSONText.string("offline")),
                ("device_class", JSONText.string("connectivity")),
                ("device", device),
            ])),
        ]
    }
}

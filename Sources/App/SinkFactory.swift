import Config
import Core
import Outputs

/// Builds the sinks `run` reports to, in order: stdout first (it is the record), then the devices.
enum SinkFactory {
    static func make(_ settings: RunSettings, logger: Logger) throws -> [EventSink] {
        var sinks: [EventSink] = []
        if let out = StdoutSink.make(settings: settings.output, logger: logger) { sinks.append(out) }
        return sinks
    }

    static func policies(_ settings: RunSettings) -> [PayloadPolicy] {
        []
    }
}

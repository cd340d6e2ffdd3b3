import Config
import Core
import Outputs
import GPIO
import Pipeline
import Serial
import Sound

/// Builds the sinks `run` reports to, in order: stdout first (it is the record), then the devices.
enum SinkFactory {
    static func make(_ settings: RunSettings, logger: Logger) throws -> [EventSink] {
        var sinks: [EventSink] = []
        if let out = StdoutSink.make(settings: settings.output, logger: logger) { sinks.append(out) }
        if let serial = try SerialSink.make(settings: settings.serial, logger: logger) { sinks.append(serial) }
        if let gpio = GPIOFeedback.make(settings: settings.gpio, logger: logger) { sinks.append(gpio) }
        if let beep = BeepSink.make(settings: settings.beep, logger: logger) { sinks.append(beep) }
        return sinks
    }

    /// Checks applied to every code before any sink sees it: the payload filters, then the serial policy.
    static func policies(_ settings: RunSettings) throws -> [PayloadPolicy] {
        var policies: [PayloadPolicy] = []
        if settings.filter.isActive { policies.append(try PayloadFilter(settings: settings.filter)) }
        if let serial = settings.serial.payloadPolicy { policies.append(serial) }
        return policies
    }
}

import Core
import Platform

/// Writes one line per event to stdout (fd 1) in one write(2), so lines reach a pipe at once and never
/// interleave. Diagnostics never go here: they go to stderr through the Logger.
public final class StdoutSink: EventSink {
    public let name = "stdout"
    private let format: OutputFormat
    private let fd: FileDescriptor
    private let logger: Logger

    public init(settings: OutputSettings, logger: Logger, fd: FileDescriptor = FileDescriptor(rawValue: 1)) {
        self.format = settings.format
        self.fd = fd
        self.logger = logger
    }

    /// nil for `--output none`.
    public static func make(settings: OutputSettings, logger: Logger) -> StdoutSink? {
        settings.format == .none ? nil : StdoutSink(settings: settings, logger: logger)
    }

    public func handle(_ event: ReadEvent) {
        let line: String?
        switch format {
        case .json: line = EventLine.json(event)
        case .text: line = EventLine.text(event)
        case .none: line = nil
        }
        guard let line else { return }
        if case .failure(let e) = fd.writeAll(Array((line + "\n").utf8)) {
            logger.error("stdout: write failed: \(e)", rateLimitKey: "stdout-write")
        }
    }

    public func close() {}
}

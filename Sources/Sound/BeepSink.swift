import Core
import Dispatch
import Synchronization

/// Beeps through ALSA for each reported code: the good pattern for an accepted read, the error pattern
/// for a rejected one. `handle` only posts to a mailbox (never blocks); tones are synthesized and played
/// on the sink's own thread, which owns the PCM. A newer event replaces a beep that is still waiting or
/// cuts the playing one short (no backlog). A missing or busy device is a logged warning (rate-limited)
/// and is tried again at the next event after a backoff; scanning never stops for it.
public final class BeepSink: EventSink {
    public let name = "beep"
    public let settings: BeepSettings
    private let logger: Logger
    private let mailbox = BeepMailbox()
    private let finished = DispatchSemaphore(value: 0)
    private let closed = Mutex(false)
    /// How long `close` waits for the playback thread to stop and close the device.
    public static let closeBoundSeconds: Double = 2

    /// The sink for `scangate run`: nil when `--beep` was not given.
    public static func make(settings: BeepSettings, logger: Logger) -> BeepSink? {
        guard settings.enabled else { return nil }
        return BeepSink(settings: settings, logger: logger)
    }

    /// - Parameters:
    ///   - calls: libasound, or a fake in unit tests.
    ///   - configuration: an in-process ALSA configuration to open `settings.device` from (tests);
    ///     nil: the system's (asound.conf).
    ///   - retryBackoffMilliseconds: first wait before an unavailable device is tried again (doubles up to 30 s).
    public init(settings: BeepSettings, logger: Logger, calls: any ALSACalls = LibASound(),
                configuration: ALSAConfiguration? = nil, retryBackoffMilliseconds: Double = 2_000) {
        self.settings = settings
        self.logger = logger
        let mailbox = self.mailbox
        let finished = self.finished
        DispatchQueue(label: "scangate.beep", qos: .userInitiated).async {
            BeepPlayer(settings: settings, logger: logger, calls: calls, configuration: configuration,
                       mailbox: mailbox, retryBackoffMilliseconds: retryBackoffMilliseconds).run()
            finished.signal()
        }
    }

    public func handle(_ event: ReadEvent) {
        guard let pattern = settings.pattern(for: event.verdict) else { return }
        mailbox.post(pattern)
    }

    /// Stops a beep in progress (a short fade, at most the device buffer plays out) and closes the device;
    /// waits at most `closeBoundSeconds`. Calling it again does nothing.
    public func close() {
        let first = closed.withLock { wasClosed in
            defer { wasClosed = true }
            return !wasClosed
        }
        guard first else { return }
        mailbox.requestClose()
        if finished.wait(timeout: .now() + Self.closeBoundSeconds) == .timedOut {
            logger.warning("beep: playback on ALSA device \(settings.device) did not stop within "
                           + "\(Int(Self.closeBoundSeconds)) s; the device is closed when it does")
        }
    }
}

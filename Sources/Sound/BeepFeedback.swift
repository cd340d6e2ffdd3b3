import Core
import Platform
import Runtime
import Settings

/// The ALSA beep as a feedback device: grant plays the good pattern, deny the error pattern, the read
/// cue its short tone, and a controller's tone command a tone of `beep-tone-hz` with the command's on and
/// off times. `play` only posts to a mailbox (never blocks); tones are synthesized and played on the
/// device's own thread, which owns the PCM. A newer request replaces a beep still waiting or cuts the
/// playing one short (no backlog). A missing or busy device is a logged warning (rate-limited) and is
/// tried again at the next beep after a backoff; scanning never stops for it.
public final class BeepFeedback: FeedbackDevice {
    public let name = "beep"
    public let settings: BeepSettings
    private let logger: Logger
    /// At most one request waits: a newer one replaces it (no backlog).
    private let worker: Worker<BeepRequest>?

    /// The device for `scangate run`: nil when `--beep` was not given.
    public static func make(settings: BeepSettings, logger: Logger) -> BeepFeedback? {
        guard settings.enabled else { return nil }
        return BeepFeedback(settings: settings, logger: logger)
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
        do {
            worker = try Worker(name: "scangate-beep", capacity: 1, overflow: .dropOldest) { inbox in
                BeepPlayer(settings: settings, logger: logger, calls: calls, configuration: configuration,
                           inbox: inbox, retryBackoffMilliseconds: retryBackoffMilliseconds).run()
            }
        } catch {
            logger.error("beep: cannot start the playback thread: \(error); beeps are off")
            worker = nil
        }
    }

    public func play(_ request: FeedbackRequest) {
        switch request {
        case .grant: post(settings.good.map { .once($0.tones) })
        case .deny: post(settings.error.map { .once($0.tones) })
        case .readCue: if let cue = settings.cue { post(.once(cue.tones)) }
        case .command(let command):
            guard let tone = command.tone else { return }
            post(BeepProgram.from(tone, hertz: settings.toneHertz))
        }
    }

    /// Plays `program`, or (nil) stops what plays.
    private func post(_ program: BeepProgram?) {
        worker?.post(program.map { .play($0) } ?? .silence)
    }

    public func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        worker?.drain(deadline: deadline) ?? true
    }

    /// Stops a beep in progress (a short fade, at most the device buffer plays out) and closes the
    /// device, waiting until `deadline`. Calling it again does nothing.
    public func close(deadline: MonotonicInstant) {
        guard let worker, !worker.isStopping else { return }
        if !worker.stop(deadline: deadline) {
            logger.warning("beep: playback on ALSA device \(settings.device) did not stop in time; "
                           + "the device is closed when it does")
        }
    }

    deinit { close(deadline: .now().adding(milliseconds: 2000)) }
}

/// What the beep's thread is asked for: a program to play, or silence (stop what plays).
enum BeepRequest: Equatable, Sendable {
    case play(BeepProgram)
    case silence
}

import Core
import Dispatch
import Platform
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
    private let mailbox = BeepMailbox()
    private let finished = DispatchSemaphore(value: 0)
    private let closed = PosixMutex(false)
    private let thread: PosixThread?

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
        let mailbox = self.mailbox
        let finished = self.finished
        do {
            thread = try PosixThread(name: "scangate-beep") {
                BeepPlayer(settings: settings, logger: logger, calls: calls, configuration: configuration,
                           mailbox: mailbox, retryBackoffMilliseconds: retryBackoffMilliseconds).run()
                finished.signal()
            }
        } catch {
            logger.error("beep: cannot start the playback thread: \(error); beeps are off")
            thread = nil
            finished.signal()
        }
    }

    public func play(_ request: FeedbackRequest) {
        switch request {
        case .grant: post(settings.good.map { .once($0.tones) })
        case .deny: post(settings.error.map { .once($0.tones) })
        case .readCue: if let cue = settings.cue { mailbox.post(.once(cue.tones)) }
        case .command(let command):
            guard let tone = command.tone else { return }
            post(BeepProgram.from(tone, hertz: settings.toneHertz))
        }
    }

    /// Plays `program`, or (nil) stops what plays.
    private func post(_ program: BeepProgram?) {
        if let program { mailbox.post(program) } else { mailbox.postSilence() }
    }

    public func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        mailbox.waitUntilIdle(deadline: deadline)
    }

    /// Stops a beep in progress (a short fade, at most the device buffer plays out) and closes the
    /// device, waiting until `deadline`. Calling it again does nothing.
    public func close(deadline: MonotonicInstant) {
        let first = closed.withLock { wasClosed in
            defer { wasClosed = true }
            return !wasClosed
        }
        guard first else { return }
        mailbox.requestClose()
        let ms = max(0, deadline.milliseconds(since: .now()))
        if finished.wait(timeout: .now() + .milliseconds(Int(ms.rounded(.up)))) == .timedOut {
            logger.warning("beep: playback on ALSA device \(settings.device) did not stop in time; "
                           + "the device is closed when it does")
            return
        }
        thread?.join()
    }

    deinit { close(deadline: .now().adding(milliseconds: 2000)) }
}

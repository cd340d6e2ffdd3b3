import Core
import Platform
import Runtime
import Settings

/// The playback loop on the beep's own thread; sole owner of the PCM. Opens the device at start, plays
/// each program taken from its worker's mailbox, stops a beep early (5 ms fade, then the short buffer drains) when a
/// newer one or a close arrives, and closes the device at the end. A device that cannot be opened or
/// fails is closed, logged (rate-limited) and tried again at the first beep after a backoff.
final class BeepPlayer {
    private let settings: BeepSettings
    private let logger: Logger
    private let calls: any ALSACalls
    private let configuration: ALSAConfiguration?
    private let inbox: WorkerInbox<BeepRequest>

    private var device: PCMDevice?
    private var rendered: [BeepProgram: [Int16]] = [:]
    /// Distinct programs kept rendered (controllers can ask for many tone lengths).
    static let renderedCacheLimit = 16
    private var retryAt = MonotonicInstant(nanoseconds: 0)
    private var backoffMilliseconds: Double
    private let initialBackoffMilliseconds: Double
    static let maxBackoffMilliseconds: Double = 30_000
    /// Fade applied when a beep is cut short, so stopping does not click.
    static let stopFadeMilliseconds: Double = 5
    /// How long the tail already in the device buffer may take to play out before it is dropped.
    static let drainBoundMilliseconds: Double = 250

    init(settings: BeepSettings, logger: Logger, calls: any ALSACalls, configuration: ALSAConfiguration?,
         inbox: WorkerInbox<BeepRequest>, retryBackoffMilliseconds: Double) {
        self.settings = settings
        self.logger = logger
        self.calls = calls
        self.configuration = configuration
        self.inbox = inbox
        self.initialBackoffMilliseconds = retryBackoffMilliseconds
        self.backoffMilliseconds = retryBackoffMilliseconds
    }

    /// Runs until the worker stops (a stop wins over anything pending); the device is closed when this returns.
    func run() {
        _ = openIfDue()
        while true {
            let next = inbox.next()
            if inbox.isStopping { break }
            guard case .message(.play(let program)) = next else { continue }   // silence: the beep was cut
            if openIfDue(), let device { play(program, on: device) }
        }
        closeDevice()
    }

    // MARK: - Device

    private var key: String { "beep-device:\(settings.device)" }

    /// True when the device is open (opening it now if the backoff has passed).
    private func openIfDue() -> Bool {
        if device != nil { return true }
        let now = MonotonicInstant.now()
        guard now >= retryAt else {
            logger.debug("beep: skipped, ALSA device \(settings.device) unavailable; next try in "
                         + "\(Int(retryAt.milliseconds(since: now))) ms")
            return false
        }
        do throws(ALSAError) {
            let opened = try PCMDevice(name: settings.device, calls: calls, configuration: configuration)
            device = opened
            rendered = [:]
            backoffMilliseconds = initialBackoffMilliseconds
            let synthesizer = ToneSynthesizer(sampleRate: opened.sampleRate, volume: settings.volume)
            let tones = [settings.good, settings.error, settings.cue].compactMap { $0 }.flatMap(\.tones)
                + [Tone(hertz: settings.toneHertz, milliseconds: 1)]
            for tone in Set(tones.map(\.hertz)).sorted().map({ Tone(hertz: $0, milliseconds: 1) }) {
                if !tone.isSilence && !synthesizer.canPlay(hertz: tone.hertz) {
                    logger.warning("beep: \(tone.hertz) Hz is too high for ALSA device \(settings.device) at "
                                   + "\(opened.sampleRate) Hz; that tone stays silent")
                }
            }
            logger.info("beep: ALSA device \(settings.device) open, \(opened.sampleRate) Hz, "
                        + "\(opened.channels == 1 ? "mono" : "\(opened.channels) channels")")
            return true
        } catch {
            unavailable(error, action: "cannot open")
            return false
        }
    }

    /// Logs a device failure (rate-limited), closes the device and schedules the next attempt.
    private func unavailable(_ error: ALSAError, action: String) {
        logger.warning("beep: \(action) ALSA device \(settings.device): \(error); beeps are off, retrying in "
                       + "\(Int(backoffMilliseconds / 1000)) s or more", rateLimitKey: key)
        closeDevice()
        retryAt = MonotonicInstant.now().adding(milliseconds: backoffMilliseconds)
        backoffMilliseconds = min(backoffMilliseconds * 2, Self.maxBackoffMilliseconds)
    }

    private func closeDevice() {
        guard let device else { return }
        self.device = nil
        do throws(ALSAError) {
            try device.close()
        } catch {
            logger.debug("beep: \(error)")
        }
    }

    // MARK: - Playing

    private func samples(for program: BeepProgram, rate: Int) -> [Int16] {
        if let cached = rendered[program] { return cached }
        let samples = ToneSynthesizer(sampleRate: rate, volume: settings.volume).render(program.tones)
        if rendered.count >= Self.renderedCacheLimit { rendered.removeAll() }
        rendered[program] = samples
        return samples
    }

    /// Plays a program to its end (a loop: until something new arrives), cutting it short with a fade
    /// when a newer request or a close arrives.
    private func play(_ pattern: BeepProgram, on device: PCMDevice) {
        let period = samples(for: pattern, rate: device.sampleRate)
        var samples = period
        let looping: Bool
        if case .loop = pattern { looping = true } else { looping = false }
        let fade = Int(Self.stopFadeMilliseconds * Double(device.sampleRate) / 1000)
        var position = 0
        var end = samples.count
        var cut = false
        let underrunsBefore = device.underruns
        do throws(ALSAError) {
            while position < end {
                if !cut && inbox.hasNews {
                    cut = true
                    end = min(end, position + fade)
                    ToneSynthesizer.fadeOut(&samples, position..<end)
                    continue
                }
                let written = try device.write(samples[position..<end])
                if written > 0 {
                    position += written
                } else {
                    try device.waitWritable(timeoutMilliseconds: 20)
                }
                if looping && !cut && position == end && !period.isEmpty {
                    samples = period
                    position = 0
                    end = samples.count
                }
            }
            try device.drain(within: Self.drainBoundMilliseconds)
            logger.debug(cut ? "beep: \(pattern) cut short on \(settings.device)"
                             : "beep: played \(pattern) on \(settings.device)")
            let underruns = device.underruns - underrunsBefore
            if underruns > 0 {
                logger.warning("beep: \(pattern) on ALSA device \(settings.device) had \(underruns) underrun"
                               + "\(underruns == 1 ? "" : "s"): the device ran out of samples, so the beep has a gap "
                               + "(the beep thread was not scheduled in time: CPU overload?)",
                               rateLimitKey: "beep-underrun:\(settings.device)")
            }
        } catch {
            unavailable(error, action: "lost")
        }
    }
}

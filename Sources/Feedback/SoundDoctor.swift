#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Sound
import Components
import Settings

/// Doctor's sound rows: the `--beep-device` PCM opened the way the beep feedback opens it, and with
/// `--test-beep` the good-read pattern played on it (written, then drained). The PCM is closed at the end.
struct SoundDoctor {
    let settings: BeepSettings
    let options: DoctorOptions
    let calls: any ALSACalls

    /// Longest the test beep may take beyond its own length before it is abandoned.
    static let slackMilliseconds: Double = 2000

    func run() -> [DoctorRow] {
        let device: PCMDevice
        do throws(ALSAError) {
            device = try PCMDevice(name: settings.device, calls: calls)
        } catch {
            return [.fail(.sound, "sound device", "\(error)", fix: fix(error))]
                + (options.testBeep ? [.skip(.sound, "sound beep", "not tried: sound device failed")] : [])
        }
        defer { try? device.close() }
        var rows = [DoctorRow.pass(.sound, "sound device",
                                   "ALSA \(settings.device): \(device.sampleRate) Hz, "
                                   + (device.channels == 1 ? "mono" : "\(device.channels) channels"))]
        guard options.testBeep, let pattern = settings.good else { return rows }
        do throws(ALSAError) {
            try play(pattern, on: device)
            rows.append(.pass(.sound, "sound beep", "played \(pattern) at volume \(settings.volume) (did it beep?)"))
        } catch {
            rows.append(.fail(.sound, "sound beep", "\(error)", fix: fix(error)))
        }
        try? device.close()
        return rows
    }

    /// Writes the pattern's samples as the device takes them, then lets them play out.
    private func play(_ pattern: BeepPattern, on device: PCMDevice) throws(ALSAError) {
        let samples = ToneSynthesizer(sampleRate: device.sampleRate, volume: settings.volume).render(pattern)
        let deadline = MonotonicInstant.now().adding(milliseconds: Double(pattern.totalMilliseconds) + Self.slackMilliseconds)
        var position = 0
        while position < samples.count {
            guard MonotonicInstant.now() < deadline else {
                try device.drop()
                throw ALSAError("snd_pcm_writei", device: settings.device, code: -ETIMEDOUT,
                                message: "the device took no samples for \(Int(Self.slackMilliseconds)) ms")
            }
            let written = try device.write(samples[position...])
            if written > 0 { position += written } else { try device.waitWritable(timeoutMilliseconds: 20) }
        }
        try device.drain(within: Double(pattern.totalMilliseconds) + Self.slackMilliseconds)
    }

    private func fix(_ error: ALSAError) -> String {
        let missing = "no such ALSA device: `aplay -l` lists the cards, `aplay -L` the names; set --beep-device "
            + "(e.g. plughw:CARD=Headphones), or remove --beep"
        // snd_pcm_open answers EINVAL for a card number that cannot exist (hw:99), ENOENT for an unknown name.
        if error.code == -ENOENT || error.code == -ENODEV || error.code == -ENXIO
            || (error.code == -EINVAL && error.operation == "snd_pcm_open") {
            return missing
        }
        return DoctorFixes.forOpen(Errno(rawValue: -error.code), device: "/dev/snd/*", group: DoctorFixes.soundGroup,
                                   missing: missing)
            ?? (error.code == -EINVAL
                ? "the device does not take 16-bit audio at 48000 Hz: use the plughw: form of --beep-device"
                : "check the device with `speaker-test -D \(settings.device) -t sine -f 2000 -l 1`")
    }
}

import Core
import Settings

/// What the beep thread plays: tones once, or one period again and again until something replaces it
/// (a controller's tone held on: OSDP BUZ with count 0, the Wiegand beeper input held low).
enum BeepProgram: Hashable, Sendable, CustomStringConvertible {
    case once([Tone])
    case loop([Tone])

    /// Longest finite program a controller's command may ask for.
    static let maximumMilliseconds = 60_000

    var tones: [Tone] {
        switch self {
        case .once(let t), .loop(let t): return t
        }
    }

    /// A controller's tone command at `hertz`, or nil for silence.
    static func from(_ command: ToneCommand, hertz: Int) -> BeepProgram? {
        guard !command.isSilence else { return nil }
        var period = [Tone(hertz: hertz, milliseconds: command.onMs)]
        if command.offMs > 0 { period.append(Tone(hertz: 0, milliseconds: command.offMs)) }
        let periodMs = command.onMs + command.offMs
        switch command.duration {
        case .untilReplaced:
            return .loop(period)
        case .cycles(let n):
            let cycles = min(n, maximumMilliseconds / max(1, periodMs))
            return cycles > 0 ? .once(Array(repeating: period, count: cycles).flatMap { $0 }) : nil
        case .milliseconds(let total):
            let limited = min(total, maximumMilliseconds)
            var tones: [Tone] = []
            var left = limited
            while left > 0 {
                for tone in period where left > 0 {
                    let ms = min(tone.milliseconds, left)
                    tones.append(Tone(hertz: tone.hertz, milliseconds: ms))
                    left -= ms
                }
            }
            return tones.isEmpty ? nil : .once(tones)
        }
    }

    var description: String {
        switch self {
        case .once(let t): return t.map { "\($0.hertz):\($0.milliseconds)" }.joined(separator: ",")
        case .loop(let t): return "repeat(" + t.map { "\($0.hertz):\($0.milliseconds)" }.joined(separator: ",") + ")"
        }
    }
}

#if canImport(Glibc)
import Glibc
import Settings
#endif

/// Renders a beep pattern to signed 16-bit mono samples: sine tones with raised-cosine attack and
/// release ramps (so no click at the start or end of a tone), silence for 0 Hz.
public struct ToneSynthesizer: Sendable {
    public var sampleRate: Int
    /// Linear amplitude, 0...1 of full scale.
    public var volume: Double
    /// Attack and release ramp length (shortened for very short tones to half the tone).
    public var rampMilliseconds: Double

    public init(sampleRate: Int, volume: Double, rampMilliseconds: Double = 3) {
        self.sampleRate = sampleRate
        self.volume = min(1, max(0, volume))
        self.rampMilliseconds = rampMilliseconds
    }

    /// Number of samples a tone takes at this rate.
    public func sampleCount(milliseconds: Int) -> Int {
        Int((Double(milliseconds) * Double(sampleRate) / 1000).rounded())
    }

    /// The whole pattern, tone after tone.
    public func render(_ pattern: BeepPattern) -> [Int16] { render(pattern.tones) }

    /// Tones one after another.
    public func render(_ tones: [Tone]) -> [Int16] {
        var out: [Int16] = []
        out.reserveCapacity(sampleCount(milliseconds: tones.reduce(0) { $0 + $1.milliseconds }))
        for tone in tones { append(tone, to: &out) }
        return out
    }

    /// True when a frequency can be reproduced at this rate (below 45% of it, clear of Nyquist).
    public func canPlay(hertz: Int) -> Bool { Double(hertz) < 0.45 * Double(sampleRate) }

    private func append(_ tone: Tone, to out: inout [Int16]) {
        let n = sampleCount(milliseconds: tone.milliseconds)
        guard !tone.isSilence, canPlay(hertz: tone.hertz), volume > 0 else {
            out.append(contentsOf: repeatElement(0, count: n))
            return
        }
        let amplitude = volume * Double(Int16.max)
        let ramp = min(Int((rampMilliseconds * Double(sampleRate) / 1000).rounded()), n / 2)
        let step = 2 * Double.pi * Double(tone.hertz) / Double(sampleRate)
        for i in 0..<n {
            var gain = 1.0
            if ramp > 0 {
                if i < ramp { gain = Self.rampGain(i, ramp) }
                else if i >= n - ramp { gain = Self.rampGain(n - 1 - i, ramp) }
            }
            out.append(Int16((amplitude * gain * sin(step * Double(i))).rounded()))
        }
    }

    /// Raised cosine from 0 (i = 0) towards 1 (i = length).
    static func rampGain(_ i: Int, _ length: Int) -> Double {
        0.5 - 0.5 * cos(Double.pi * Double(i) / Double(length))
    }

    /// Fades `samples[range]` to zero in place (used to stop a tone early without a click).
    static func fadeOut(_ samples: inout [Int16], _ range: Range<Int>) {
        let length = range.count
        guard length > 0 else { return }
        for (k, i) in range.enumerated() {
            let gain = rampGain(length - k, length)
            samples[i] = Int16((Double(samples[i]) * gain).rounded())
        }
    }
}

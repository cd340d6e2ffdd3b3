#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64: a small seeded generator, so a scenario renders the same pixels on every run and machine.
public struct DeterministicRandom: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Standard normal (Box–Muller).
    public mutating func nextGaussian() -> Double {
        let u1 = max(nextUnit(), 1e-12), u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// A well-mixed value from a seed and an index (frame noise offsets).
    public static func mix(_ seed: UInt64, _ index: UInt64) -> UInt64 {
        var r = DeterministicRandom(seed: seed ^ (index &* 0xD1B5_4A32_D192_ED03))
        return r.next()
    }
}

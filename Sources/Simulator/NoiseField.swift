/// Gaussian sensor noise made cheap: a table of pre-drawn samples (at one sigma) is added to a frame
/// starting at an offset that depends on the frame number, so each frame differs but renders reproducibly.
final class NoiseField {
    private static let size = 1 << 18
    private let samples: [Int16]

    init(sigma: Double, seed: UInt64) {
        var random = DeterministicRandom(seed: seed)
        samples = (0..<NoiseField.size).map { _ in
            Int16(max(-255, min(255, (random.nextGaussian() * sigma).rounded())))
        }
    }

    /// Adds noise to `pixels` inside the rectangle (x, y, w, h) of an image `stride` pixels wide.
    func apply(to pixels: inout [UInt8], stride: Int, x: Int, y: Int, w: Int, h: Int, frameKey: UInt64) {
        let mask = NoiseField.size - 1
        var k = Int(truncatingIfNeeded: frameKey & UInt64(mask))
        // An odd step through the table makes neighbouring rows differ.
        let step = Int(truncatingIfNeeded: (frameKey >> 20) & 0xFF) * 2 + 1
        samples.withUnsafeBufferPointer { noise in
            pixels.withUnsafeMutableBufferPointer { out in
                for row in y..<(y + h) {
                    var i = row * stride + x
                    for _ in 0..<w {
                        let v = Int(out[i]) + Int(noise[k])
                        out[i] = UInt8(v < 0 ? 0 : (v > 255 ? 255 : v))
                        i += 1
                        k = (k + step) & mask
                    }
                }
            }
        }
    }
}

import Core

/// Cheap change detection on a downscaled frame, so a static scene is not decoded again and again.
/// The frame is reduced to two numbers per `blockSize`×`blockSize` block (sampling every other pixel of
/// every other row): the mean grey level and the mean horizontal gradient (edge energy, which changes
/// when a code comes into focus even if the mean does not). The frame counts as changed when at least
/// `minChangedBlocks` blocks moved by more than `threshold` levels in either number since the last
/// decoded frame. A code entering the view changes whole blocks, so it is decoded in the first frame it
/// appears in; sensor noise averages out over the block.
public struct ChangeGate: Sendable {
    public var blockSize = 16
    public var threshold = 6
    public var minChangedBlocks = 2

    private var reference: [UInt16] = []
    private var referenceWidth = 0
    private var referenceHeight = 0
    private var scratch: [UInt16] = []

    public init() {}

    /// True when `frame` differs from the last frame passed to `accept` (or there is none).
    public mutating func hasChanged(_ frame: Frame) -> Bool {
        summarise(frame, into: &scratch)
        guard frame.width == referenceWidth, frame.height == referenceHeight, reference.count == scratch.count else {
            return true
        }
        var changed = 0
        let t = UInt16(threshold)
        for i in 0..<scratch.count {
            let a = scratch[i], b = reference[i]
            if (a > b ? a - b : b - a) > t {
                changed += 1
                if changed >= minChangedBlocks { return true }
            }
        }
        return false
    }

    /// Makes the frame last summarised by `hasChanged` the reference (call after decoding it).
    public mutating func acceptLastSummary(width: Int, height: Int) {
        swap(&reference, &scratch)
        referenceWidth = width
        referenceHeight = height
    }

    private func summarise(_ frame: Frame, into out: inout [UInt16]) {
        let bw = (frame.width + blockSize - 1) / blockSize
        let bh = (frame.height + blockSize - 1) / blockSize
        let blocks = bw * bh
        if out.count != blocks * 2 { out = [UInt16](repeating: 0, count: blocks * 2) }
        var sums = [UInt32](repeating: 0, count: blocks)
        var edges = [UInt32](repeating: 0, count: blocks)
        var counts = [UInt32](repeating: 0, count: blocks)
        let w = frame.width, bs = blockSize
        frame.luma.withUnsafeBufferPointer { p in
            sums.withUnsafeMutableBufferPointer { s in
              edges.withUnsafeMutableBufferPointer { e in
                counts.withUnsafeMutableBufferPointer { c in
                    var y = 0
                    while y < frame.height {
                        let row = y * w
                        let brow = (y / bs) * bw
                        var x = 0
                        var previous = Int(p[row])
                        while x < w {
                            let b = brow + x / bs
                            let v = Int(p[row + x])
                            s[b] &+= UInt32(v)
                            e[b] &+= UInt32(abs(v - previous))
                            c[b] &+= 1
                            previous = v
                            x += 2
                        }
                        y += 2
                    }
                }
              }
            }
        }
        for i in 0..<blocks {
            out[2 * i] = counts[i] == 0 ? 0 : UInt16(sums[i] / counts[i])
            out[2 * i + 1] = counts[i] == 0 ? 0 : UInt16(edges[i] / counts[i])
        }
    }
}

/// Wraps a decoder with the change gate: an unchanged frame gets the previous frame's symbols without
/// a zbar pass (so the debouncer still sees a held code as in view), and every `rescanEvery` frames a
/// full decode is forced regardless.
public final class GatedDecoder: Decoder {
    private let inner: Decoder
    private var gate = ChangeGate()
    private let rescanEvery: Int
    private var sinceFullDecode = 0
    private var lastSymbols: [DecodedSymbol] = []
    /// Frames decoded in full / answered from the gate.
    public private(set) var fullDecodes: UInt64 = 0
    public private(set) var skipped: UInt64 = 0

    public init(_ inner: Decoder, rescanEvery: Int, threshold: Int = 6) {
        self.inner = inner
        self.rescanEvery = max(1, rescanEvery)
        self.gate.threshold = threshold
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        let changed = gate.hasChanged(frame)
        sinceFullDecode += 1
        if !changed && sinceFullDecode < rescanEvery {
            skipped += 1
            return lastSymbols
        }
        gate.acceptLastSummary(width: frame.width, height: frame.height)
        sinceFullDecode = 0
        fullDecodes += 1
        lastSymbols = inner.decode(frame)
        return lastSymbols
    }
}

import Core
import Platform

/// The live-path row of `scangate bench`: every decoder on every live-path frame, interleaved (each frame
/// is read into memory once, then each decoder decodes it in turn, `repeats` times, the order rotated
/// from frame to frame), scored as reads per category and misreads, and timed as thread-CPU per frame.
public struct LiveFrameBench {
    public var repeats: Int
    public var progress: (String) -> Void

    public init(repeats: Int = 3, progress: @escaping (String) -> Void = { _ in }) {
        self.repeats = max(1, repeats)
        self.progress = progress
    }

    /// Scores `decoders` (the first is the CPU ratios' denominator: zbar) on `frames`, with `reference`
    /// (the Python scorer's results, zxing-cpp 3.1.1) as a last column when given.
    public func run(_ frames: LiveFrameSet, decoders: [BenchDecoder],
                    reference: LiveFrameReference? = nil) throws(UsageError) -> LiveFrameReport {
        var scores = decoders.map { LiveFrameReport.Column(decoder: $0.name, categories: frames.categories.map(\.name)) }
        var lastShown = MonotonicInstant.now()
        for index in frames.items.indices {
            if index == 0 || MonotonicInstant.now().milliseconds(since: lastShown) >= 1000 {
                progress("live-path frames \(index)/\(frames.items.count)")
                lastShown = .now()
            }
            let item = frames.items[index]
            let frame = try frames.frame(at: index)
            var best = [Double](repeating: .infinity, count: decoders.count)
            var found = [[[UInt8]]](repeating: [], count: decoders.count)
            for round in 0..<repeats {
                for k in decoders.indices {
                    let d = (k + index + round) % decoders.count
                    let c0 = BenchClock.threadCPUMilliseconds()
                    let payloads = decoders[d].read(frame)
                    best[d] = min(best[d], BenchClock.threadCPUMilliseconds() - c0)
                    if round == 0 { found[d] = payloads }
                }
            }
            for d in decoders.indices {
                scores[d].add(file: item.file, category: item.category, expected: item.payload, found: found[d], cpuMs: best[d])
            }
        }
        var report = LiveFrameReport(directory: frames.directory, key: frames.key, frames: frames.items.count,
                                     repeats: repeats, categories: frames.categories, columns: scores)
        if let reference {
            report.columns.append(reference.column(for: frames))
            report.referenceNote = reference.note
        }
        return report
    }
}

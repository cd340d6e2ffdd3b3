import Core
import Platform

/// `camera-tamper`: watches the frames for a camera that is covered (the view dark or uniform) or turned
/// away (the scene no longer the one it learned at start), and says so on the daemon's
/// `CameraSceneSignal` once the change has lasted `after` seconds. Runs on the capture thread, on a
/// sample of the frame every 200 ms of capture time (a 16 x 12 grid of cell means, at most 8 x 8 pixels
/// read per cell: about 12,000 reads), so decoding never waits on it. Time is the frames' capture time,
/// so a simulated or replayed scene gives the same answer at any speed.
///
/// - Covered: the cells' mean luma is below the dark level, or their spread (standard deviation) is
///   below 3 grey levels: a hand, tape or a cap over the lens, or a lens pressed against a surface.
/// - Turned away: the cells' pattern, with brightness and contrast taken out, correlates below 0.5 with
///   the scene learned at start. A change of lighting keeps the pattern; a person at the reader changes
///   it only while they stand there, which is shorter than `after`.
/// - The scene is learned once a view that is not covered has held steady (correlation 0.8 or more) for
///   2 s; each run of the pipeline (start, reload) learns it afresh, so re-aim, then reload.
/// - The tamper clears once the view has been as it should for 2 s.
public final class SceneWatch {
    public struct Sample: Equatable, Sendable {
        /// Mean luma of the cells, 0-255.
        public var mean: Double
        /// Standard deviation of the cells' means.
        public var spread: Double
        /// Correlation with the learned scene (-1 to 1), nil before one is learned or when covered.
        public var similarity: Double?
    }

    static let columns = 16, rows = 12
    static let samplesPerCellSide = 8
    static let intervalMs = 200.0
    static let uniformSpread = 3.0
    static let learnSteady = 0.8
    static let learnMs = 2000.0
    static let turnedBelow = 0.5
    static let clearMs = 2000.0

    private let afterMs: Double
    private let darkLevel: Double
    private let signal: CameraSceneSignal
    private let logger: Logger
    private var lastSampleAt: MonotonicInstant?
    private var candidate: (pattern: [Double], since: MonotonicInstant)?
    private var reference: [Double]?
    private var abnormalSince: MonotonicInstant?
    private var normalSince: MonotonicInstant?
    private var alarm: CameraTamper?
    /// The last sample taken (for tests and status).
    public private(set) var last: Sample?

    public init(afterSeconds: Int, darkLevel: Int, signal: CameraSceneSignal, logger: Logger) {
        afterMs = Double(afterSeconds) * 1000
        self.darkLevel = Double(darkLevel)
        self.signal = signal
        self.logger = logger
        signal.setWatching(true)
    }

    /// Looks at `frame` if 200 ms of capture time have passed since the last look.
    public func observe(_ frame: Frame) {
        let t = frame.captureTime
        if let at = lastSampleAt, t >= at, t.milliseconds(since: at) < Self.intervalMs { return }
        if let at = lastSampleAt, t < at {
            // The source's clock went back (a replay started over): the spans being timed start again now.
            abnormalSince = abnormalSince.map { _ in t }
            normalSince = normalSince.map { _ in t }
            candidate = candidate.map { ($0.pattern, t) }
        }
        lastSampleAt = t
        guard let cells = Self.cells(frame) else { return }
        judge(cells, at: t)
    }

    /// The grid's cell means, row by row; nil for a frame smaller than the grid.
    static func cells(_ frame: Frame) -> [Double]? {
        let w = frame.width, h = frame.height
        guard w >= columns, h >= rows, frame.luma.count >= w * h else { return nil }
        var out = [Double](repeating: 0, count: columns * rows)
        frame.luma.withUnsafeBufferPointer { px in
            for r in 0..<rows {
                let y0 = r * h / rows, y1 = (r + 1) * h / rows
                let stepY = max(1, (y1 - y0) / samplesPerCellSide)
                for c in 0..<columns {
                    let x0 = c * w / columns, x1 = (c + 1) * w / columns
                    let stepX = max(1, (x1 - x0) / samplesPerCellSide)
                    var sum = 0, n = 0
                    var y = y0
                    while y < y1 {
                        var x = x0
                        while x < x1 {
                            sum += Int(px[y * w + x])
                            n += 1
                            x += stepX
                        }
                        y += stepY
                    }
                    out[r * columns + c] = n > 0 ? Double(sum) / Double(n) : 0
                }
            }
        }
        return out
    }

    /// Mean, standard deviation, and the cells with both taken out (nil when they are all the same).
    static func normalise(_ cells: [Double]) -> (mean: Double, spread: Double, pattern: [Double]?) {
        let n = Double(cells.count)
        let mean = cells.reduce(0, +) / n
        let spread = (cells.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / n).squareRoot()
        guard spread > 0 else { return (mean, spread, nil) }
        return (mean, spread, cells.map { ($0 - mean) / spread })
    }

    /// Pearson correlation of two normalised patterns.
    static func correlation(_ a: [Double], _ b: [Double]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return 0 }
        var s = 0.0
        for i in a.indices { s += a[i] * b[i] }
        return s / Double(a.count)
    }

    private func judge(_ cells: [Double], at t: MonotonicInstant) {
        let (mean, spread, pattern) = Self.normalise(cells)
        let covered = mean < darkLevel || spread < Self.uniformSpread
        var similarity: Double?
        if !covered, let pattern {
            learn(pattern, at: t)
            if let reference { similarity = Self.correlation(pattern, reference) }
        }
        last = Sample(mean: mean, spread: spread, similarity: similarity)
        let kind: CameraTamper? = covered ? .covered : (similarity.map { $0 < Self.turnedBelow } ?? false) ? .turnedAway : nil
        let figures = "mean luma \(Int(mean.rounded())), spread \(JSONText.number(spread, decimals: 1))"
            + (similarity.map { ", similarity to the learned scene \(JSONText.number($0, decimals: 2))" } ?? "")
        if let kind {
            normalSince = nil
            let since = abnormalSince ?? t
            abnormalSince = since
            if alarm != kind, t.milliseconds(since: since) >= afterMs || alarm != nil {
                alarm = kind
                signal.set(kind)
                logger.warning("camera tamper: the camera is \(kind == .covered ? "covered (the view is dark or uniform)" : "turned away (the scene is not the one learned at start)") for \(Int(t.milliseconds(since: since) / 1000)) s: \(figures)")
            }
        } else {
            abnormalSince = nil
            guard let was = alarm else { return }
            let since = normalSince ?? t
            normalSince = since
            if t.milliseconds(since: since) >= Self.clearMs {
                alarm = nil
                signal.set(nil)
                logger.notice("camera tamper cleared: the view is as learned again (was \(was.rawValue)): \(figures)")
            }
        }
    }

    private func learn(_ pattern: [Double], at t: MonotonicInstant) {
        guard reference == nil else { return }
        guard let c = candidate, Self.correlation(pattern, c.pattern) >= Self.learnSteady else {
            candidate = (pattern, t)
            return
        }
        if t.milliseconds(since: c.since) >= Self.learnMs {
            reference = c.pattern
            candidate = nil
            logger.info("camera tamper: scene learned (a turn away from it is reported after \(Int(afterMs / 1000)) s)")
        }
    }
}

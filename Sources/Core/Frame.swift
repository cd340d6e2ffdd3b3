import Platform

/// One 8-bit luma image (stride == width) from a source.
public struct Frame: Sendable {
    public let width: Int
    public let height: Int
    /// Frame number from the source, starting at 0 (replay: file order; V4L2: the driver's sequence).
    public let sequence: UInt64
    /// Capture time on the source's timeline, used by the debouncer. V4L2: the driver's monotonic buffer
    /// timestamp. Simulator and replay: sequence / fps, so `--fast` gives the events real time would.
    public let captureTime: MonotonicInstant
    /// When the frame left the source on this machine's CLOCK_MONOTONIC, for latency figures.
    public let dequeuedAt: MonotonicInstant
    /// width * height luma bytes, row-major.
    public let luma: [UInt8]

    public init(width: Int, height: Int, sequence: UInt64, captureTime: MonotonicInstant,
                dequeuedAt: MonotonicInstant = .now(), luma: [UInt8]) {
        precondition(luma.count == width * height, "luma size must be width*height")
        self.width = width
        self.height = height
        self.sequence = sequence
        self.captureTime = captureTime
        self.dequeuedAt = dequeuedAt
        self.luma = luma
    }

    /// Capture time for frame `sequence` of a source paced at `fps` (simulator, replay).
    public static func mediaTime(sequence: UInt64, fps: Double) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64((Double(sequence) / fps * 1e9).rounded()))
    }
}

/// A rectangle in frame pixels.
public struct Rect: Equatable, Sendable, Codable {
    public var x: Int, y: Int, w: Int, h: Int
    public init(x: Int, y: Int, w: Int, h: Int) { self.x = x; self.y = y; self.w = w; self.h = h }

    /// The box around `points` (a one-pixel box at the origin when there are none).
    public init(enclosing points: [Point]) {
        guard let first = points.first else { self.init(x: 0, y: 0, w: 0, h: 0); return }
        var minX = first.x, minY = first.y, maxX = first.x, maxY = first.y
        for p in points.dropFirst() {
            minX = min(minX, p.x); maxX = max(maxX, p.x); minY = min(minY, p.y); maxY = max(maxY, p.y)
        }
        self.init(x: minX, y: minY, w: maxX - minX + 1, h: maxY - minY + 1)
    }

    /// Top-left, top-right, bottom-right, bottom-left.
    public var corners: [Point] {
        [Point(x: x, y: y), Point(x: x + max(w - 1, 0), y: y), Point(x: x + max(w - 1, 0), y: y + max(h - 1, 0)),
         Point(x: x, y: y + max(h - 1, 0))]
    }
}

/// A point in frame pixels.
public struct Point: Equatable, Sendable, Codable {
    public var x: Int, y: Int
    public init(x: Int, y: Int) { self.x = x; self.y = y }
}

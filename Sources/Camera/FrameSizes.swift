import CV4L2

public struct FrameSize: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) { self.width = width; self.height = height }
    public var description: String { "\(width)x\(height)" }
}

/// What ENUM_FRAMESIZES says about one format.
enum FrameSizes: Equatable {
    case discrete([FrameSize])
    case stepwise(min: FrameSize, max: FrameSize, step: FrameSize)
    /// The driver does not enumerate sizes (S_FMT is the only way to know).
    case notListed

    /// True/false when the driver listed its sizes, nil when it did not.
    func contains(_ size: FrameSize) -> Bool? {
        switch self {
        case .discrete(let sizes): return sizes.contains(size)
        case .stepwise(let lo, let hi, let step):
            return (lo.width...hi.width).contains(size.width) && (lo.height...hi.height).contains(size.height)
                && (size.width - lo.width) % step.width == 0 && (size.height - lo.height) % step.height == 0
        case .notListed: return nil
        }
    }
}

/// What ENUM_FRAMEINTERVALS says about one format and size, as frames per second.
enum FrameRates: Equatable {
    case discrete([Double])
    case range(min: Double, max: Double)
    case notListed

    /// True/false when the driver listed rates (within 1%), nil when it did not.
    func contains(_ fps: Double) -> Bool? {
        switch self {
        case .discrete(let rates): return rates.contains { abs($0 - fps) <= fps * 0.01 }
        case .range(let lo, let hi): return fps >= lo * 0.99 && fps <= hi * 1.01
        case .notListed: return nil
        }
    }

    var description: String {
        switch self {
        case .discrete(let rates): return rates.map { FrameRates.text($0) }.joined(separator: ", ") + " fps"
        case .range(let lo, let hi): return "\(FrameRates.text(lo))-\(FrameRates.text(hi)) fps"
        case .notListed: return "rates not listed"
        }
    }

    static func fps(_ interval: v4l2_fract) -> Double? {
        guard interval.numerator > 0, interval.denominator > 0 else { return nil }
        return Double(interval.denominator) / Double(interval.numerator)
    }

    /// "15", "7.5", "59.94".
    static func text(_ fps: Double) -> String {
        let rounded = (fps * 100).rounded() / 100
        if rounded == rounded.rounded() { return String(Int(rounded)) }
        return String(rounded)
    }
}

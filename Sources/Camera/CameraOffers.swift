import Platform

/// Everything a capture node says it can do: each format with its sizes and, per size, its rates.
/// Used for format choice, for the "it offers ..." part of errors, and by `scangate list-cameras`.
struct CameraOffers: Equatable {
    struct Format: Equatable {
        var description: FormatDescription
        var sizes: FrameSizes
        /// Rates per discrete size (for a stepwise range: the rates at the range's largest size).
        var rates: [FrameSize: FrameRates]
    }

    var formats: [Format]

    /// Asks the device (ENUM_FMT, ENUM_FRAMESIZES, ENUM_FRAMEINTERVALS).
    static func query(_ device: V4L2Device) throws(SystemError) -> CameraOffers {
        var formats: [Format] = []
        for description in try device.formats() where !description.emulated {
            let sizes = try device.frameSizes(description.fourcc)
            var rates: [FrameSize: FrameRates] = [:]
            switch sizes {
            case .discrete(let list):
                for size in list.prefix(64) { rates[size] = try device.frameRates(description.fourcc, size) }
            case .stepwise(_, let largest, _):
                rates[largest] = try device.frameRates(description.fourcc, largest)
            case .notListed:
                break
            }
            formats.append(Format(description: description, sizes: sizes, rates: rates))
        }
        return CameraOffers(formats: formats)
    }

    func format(_ fourcc: FourCC) -> Format? { formats.first { $0.description.fourcc == fourcc } }

    /// "YUYV 640x480 (30, 15 fps), 1280x720 (10 fps); MJPG 640x480 (30 fps)".
    var summary: String {
        guard !formats.isEmpty else { return "no capture formats" }
        return formats.map { f in
            "\(f.description.fourcc) " + CameraOffers.sizesText(f, separator: ", ")
        }.joined(separator: "; ")
    }

    static func sizesText(_ f: Format, separator: String) -> String {
        switch f.sizes {
        case .discrete(let sizes):
            return sizes.map { size in
                guard let rates = f.rates[size], rates != .notListed else { return size.description }
                return "\(size) (\(rates.description))"
            }.joined(separator: separator)
        case .stepwise(let lo, let hi, let step):
            let rates = f.rates[hi].map { $0 == .notListed ? "" : " (\($0.description) at \(hi))" } ?? ""
            return "\(lo) to \(hi) in steps of \(step)\(rates)"
        case .notListed:
            return "(sizes not listed)"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform
import Settings

/// The capture format the driver agreed to.
struct NegotiatedFormat: Equatable {
    var fourcc: FourCC
    var layout: LumaLayout
    var width: Int
    var height: Int
    /// Distance between rows of the (first) plane; at least the row's own bytes.
    var bytesPerLine: Int
    var sizeImage: Int
}

/// Picks the format: the requested size is fixed; among the formats that can give it, the first in
/// `LumaLayout.preference` (or the one `--pixel-format` names); then the frame rate.
struct FormatNegotiation {
    let device: V4L2Device
    let settings: CaptureSettings
    let logger: Logger

    var size: FrameSize { FrameSize(width: settings.width, height: settings.height) }

    /// Formats to try with S_FMT, best first. Formats the driver lists with the wanted size come first
    /// (those also listing the wanted rate before the others); formats whose sizes are not listed next.
    func candidates(_ offers: CameraOffers) throws(UsageError) -> [FourCC] {
        let offered = offers.formats.map(\.description.fourcc)
        let usable: [FourCC]
        if settings.pixelFormat == .auto {
            usable = LumaLayout.preference.filter(offered.contains)
            guard !usable.isEmpty else {
                throw UsageError("camera \(device.path) offers no format ScanGate reads (it offers "
                                 + "\(offered.map(\.description).joined(separator: ", ")); usable: GREY, YUYV, UYVY, "
                                 + "NV12, YU12, YV12, MJPG)")
            }
        } else {
            let wanted = FourCC(settings.pixelFormat.rawValue) ?? .grey
            let accepted: [FourCC] = wanted == .mjpg ? [.mjpg, .jpeg] : [wanted]
            usable = accepted.filter(offered.contains)
            guard !usable.isEmpty else {
                throw UsageError("camera \(device.path) does not offer --pixel-format \(settings.pixelFormat.rawValue); "
                                 + "it offers: \(offers.summary)")
            }
        }
        func rank(_ fourcc: FourCC) -> Int? {
            guard let format = offers.format(fourcc) else { return 3 }
            switch format.sizes.contains(size) {
            case .some(false): return nil
            case .none: return 3
            case .some(true):
                switch format.rates[size]?.contains(settings.fps) {
                case .some(true): return 0
                case .none: return 1
                case .some(false): return 2
                }
            }
        }
        let ranked = usable.enumerated().compactMap { i, f in rank(f).map { (rank: $0, order: i, fourcc: f) } }
            .sorted { ($0.rank, $0.order) < ($1.rank, $1.order) }.map(\.fourcc)
        // Nothing lists the size: still ask (a driver may scale), so the error shows what it gave.
        return ranked.isEmpty ? [usable[0]] : ranked
    }

    /// S_FMT with each candidate until the driver gives exactly the wanted size in that format.
    /// A size no format can give is a `UsageError` listing the device's offers.
    func negotiate(_ offers: CameraOffers) throws -> NegotiatedFormat {
        var refusals: [String] = []
        for fourcc in try candidates(offers) {
            guard let layout = LumaLayout(fourcc) else { continue }
            var f = v4l2_format()
            f.type = V4L2Device.captureType
            f.fmt.pix.width = UInt32(settings.width)
            f.fmt.pix.height = UInt32(settings.height)
            f.fmt.pix.pixelformat = fourcc.rawValue
            f.fmt.pix.field = V4L2_FIELD_ANY.rawValue
            let answer: v4l2_format
            switch device.ioctl(.setFormat, f) {
            case .success(let a): answer = a
            case .failure(let e) where e.errno == .invalidArgument:
                refusals.append("\(fourcc): refused (\(e.errno))")
                continue
            case .failure(let e):
                throw e
            }
            let pix = answer.fmt.pix
            let got = FourCC(rawValue: pix.pixelformat)
            guard got == fourcc else {
                refusals.append("\(fourcc): driver chose \(got) instead")
                continue
            }
            guard Int(pix.width) == settings.width, Int(pix.height) == settings.height else {
                refusals.append("\(fourcc): driver gave \(pix.width)x\(pix.height)")
                continue
            }
            let minimum = layout.minimumBytesPerLine(width: settings.width)
            let bytesPerLine = max(Int(pix.bytesperline), minimum)
            let format = NegotiatedFormat(fourcc: fourcc, layout: layout, width: settings.width,
                                          height: settings.height, bytesPerLine: bytesPerLine,
                                          sizeImage: Int(pix.sizeimage))
            logger.info("camera \(device.path): \(fourcc) \(settings.width)x\(settings.height), "
                        + "\(bytesPerLine) bytes per line")
            return format
        }
        throw UsageError("camera \(device.path) cannot give \(settings.width)x\(settings.height)"
                         + (settings.pixelFormat == .auto ? "" : " in \(settings.pixelFormat.rawValue)")
                         + " (\(refusals.joined(separator: "; "))); it offers: \(offers.summary)")
    }

    /// Asks for `settings.fps` (S_PARM timeperframe) and returns the rate the driver runs at (nil when it
    /// does not say). A different rate is not an error: many drivers run at their own rate (vivid's HDMI
    /// input at 59.94), and draining to the newest frame copes with a faster camera.
    func setFrameRate(_ offers: CameraOffers, format: NegotiatedFormat) throws(SystemError) -> Double? {
        var p = v4l2_streamparm()
        p.type = V4L2Device.captureType
        let current: v4l2_streamparm
        switch device.ioctl(.getParameters, p) {
        case .success(let c): current = c
        case .failure(let e) where e.errno == .invalidArgument || e.errno.rawValue == ENOTTY:
            logger.info("camera \(device.path): the driver has no frame-rate setting")
            return nil
        case .failure(let e): throw e
        }
        guard current.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 else {
            let rate = FrameRates.fps(current.parm.capture.timeperframe)
            logger.info("camera \(device.path): the driver cannot set a frame rate; it runs at "
                        + (rate.map { FrameRates.text($0) + " fps" } ?? "its own rate"))
            return rate
        }
        var wanted = current
        wanted.parm.capture.timeperframe = FormatNegotiation.interval(fps: settings.fps)
        let actual: Double?
        switch device.ioctl(.setParameters, wanted) {
        case .success(let answer): actual = FrameRates.fps(answer.parm.capture.timeperframe)
        case .failure(let e) where e.errno == .invalidArgument:
            actual = FrameRates.fps(current.parm.capture.timeperframe)
        case .failure(let e): throw e
        }
        if let actual, abs(actual - settings.fps) > settings.fps * 0.01 {
            let listed = offers.format(format.fourcc)?.rates[FrameSize(width: format.width, height: format.height)]
            logger.notice("camera \(device.path) runs at \(FrameRates.text(actual)) fps, not the \(FrameRates.text(settings.fps)) asked"
                          + (listed.map { "; it offers \($0.description) at this size" } ?? ""))
        }
        return actual
    }

    /// 1/fps as a small fraction: 15 → 1/15, 7.5 → 2/15, 59.94 → 50/2997.
    static func interval(fps: Double) -> v4l2_fract {
        var numerator = 1000
        var denominator = max(1, Int((fps * 1000).rounded()))
        var a = numerator, b = denominator
        while b != 0 { (a, b) = (b, a % b) }
        numerator /= a
        denominator /= a
        return v4l2_fract(numerator: UInt32(numerator), denominator: UInt32(denominator))
    }
}

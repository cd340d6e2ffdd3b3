#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Platform

/// One open V4L2 node: typed ioctls over the `V4L2Calls` seam. Every failure is a `SystemError` naming
/// the VIDIOC_ request and the device path. Does not own the descriptor (see `V4L2Session` / the caller).
struct V4L2Device {
    let calls: any V4L2Calls
    let fd: Int32
    let path: String

    static let captureType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    static let mmapMemory = V4L2_MEMORY_MMAP.rawValue

    /// Opens `path` (a /dev/videoN node or a /dev/v4l/by-id link: open(2) follows it).
    static func open(_ path: String, calls: any V4L2Calls) -> Result<V4L2Device, SystemError> {
        calls.open(path).map { V4L2Device(calls: calls, fd: $0, path: path) }.mapError { SystemError("open", path, $0) }
    }

    func close() -> Result<Void, SystemError> {
        calls.close(fd).mapError { SystemError("close", path, $0) }
    }

    /// Issues `request` on a copy of `value` and returns what the driver wrote back.
    func ioctl<T>(_ request: V4L2Request, _ value: T) -> Result<T, SystemError> {
        var copy = value
        let result = withUnsafeMutableBytes(of: &copy) { raw -> Result<Void, Errno> in
            guard let base = raw.baseAddress else { return .failure(.invalidArgument) }
            return calls.ioctl(fd, request, base)
        }
        return result.map { copy }.mapError { SystemError(request.description, path, $0) }
    }

    // MARK: identity

    func capability() -> Result<DeviceCapability, SystemError> {
        ioctl(.queryCapability, v4l2_capability()).map(DeviceCapability.init)
    }

    // MARK: formats

    /// The native capture formats (ENUM_FMT until EINVAL).
    func formats() throws(SystemError) -> [FormatDescription] {
        var out: [FormatDescription] = []
        for index in 0..<V4L2Device.enumerationLimit {
            var desc = v4l2_fmtdesc()
            desc.index = UInt32(index)
            desc.type = V4L2Device.captureType
            switch ioctl(.enumerateFormat, desc) {
            case .success(let d): out.append(FormatDescription(d))
            case .failure(let e) where e.errno == .invalidArgument: return out
            case .failure(let e): throw e
            }
        }
        return out
    }

    /// The frame sizes of `format`; `.notListed` when the driver does not implement ENUM_FRAMESIZES.
    func frameSizes(_ format: FourCC) throws(SystemError) -> FrameSizes {
        var discrete: [FrameSize] = []
        for index in 0..<V4L2Device.enumerationLimit {
            var e = v4l2_frmsizeenum()
            e.index = UInt32(index)
            e.pixel_format = format.rawValue
            let answer: v4l2_frmsizeenum
            switch ioctl(.enumerateFrameSizes, e) {
            case .success(let a): answer = a
            case .failure(let err) where err.errno == .invalidArgument || err.errno.rawValue == ENOTTY:
                return discrete.isEmpty ? .notListed : .discrete(discrete)
            case .failure(let err): throw err
            }
            if answer.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                discrete.append(FrameSize(width: Int(answer.discrete.width), height: Int(answer.discrete.height)))
            } else {
                let s = answer.stepwise
                return .stepwise(min: FrameSize(width: Int(s.min_width), height: Int(s.min_height)),
                                 max: FrameSize(width: Int(s.max_width), height: Int(s.max_height)),
                                 step: FrameSize(width: Int(max(1, s.step_width)), height: Int(max(1, s.step_height))))
            }
        }
        return .discrete(discrete)
    }

    /// The frame rates of `format` at one size; `.notListed` when the driver does not say.
    func frameRates(_ format: FourCC, _ size: FrameSize) throws(SystemError) -> FrameRates {
        var discrete: [Double] = []
        for index in 0..<V4L2Device.enumerationLimit {
            var e = v4l2_frmivalenum()
            e.index = UInt32(index)
            e.pixel_format = format.rawValue
            e.width = UInt32(size.width)
            e.height = UInt32(size.height)
            let answer: v4l2_frmivalenum
            switch ioctl(.enumerateFrameIntervals, e) {
            case .success(let a): answer = a
            case .failure(let err) where err.errno == .invalidArgument || err.errno.rawValue == ENOTTY:
                return discrete.isEmpty ? .notListed : .discrete(discrete)
            case .failure(let err): throw err
            }
            if answer.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if let fps = FrameRates.fps(answer.discrete) { discrete.append(fps) }
            } else {
                // The shortest interval is the highest rate.
                let fastest = FrameRates.fps(answer.stepwise.min) ?? 0
                let slowest = FrameRates.fps(answer.stepwise.max) ?? 0
                return .range(min: slowest, max: fastest)
            }
        }
        return .discrete(discrete)
    }

    func getFormat() -> Result<v4l2_format, SystemError> {
        var f = v4l2_format()
        f.type = V4L2Device.captureType
        return ioctl(.getFormat, f)
    }

    // MARK: streaming

    func streamOn() -> Result<Void, SystemError> {
        ioctl(.streamOn, Int32(bitPattern: V4L2Device.captureType)).map { _ in () }
    }

    func streamOff() -> Result<Void, SystemError> {
        ioctl(.streamOff, Int32(bitPattern: V4L2Device.captureType)).map { _ in () }
    }

    func poll(timeoutMilliseconds: Int32) -> Result<Int16, SystemError> {
        calls.poll(fd, events: Int16(POLLIN), timeoutMilliseconds: timeoutMilliseconds).mapError { SystemError("poll", path, $0) }
    }

    /// Bound on every enumeration, so a confused driver cannot loop us forever.
    static let enumerationLimit = 256
}

/// QUERYCAP, reduced to what ScanGate needs. `capabilities` is the node's own set (device_caps) when given.
struct DeviceCapability: Equatable {
    var driver: String
    var card: String
    var busInfo: String
    var capabilities: UInt32

    init(driver: String, card: String, busInfo: String, capabilities: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.capabilities = capabilities
    }

    init(_ cap: v4l2_capability) {
        driver = cString(cap.driver)
        card = cString(cap.card)
        busInfo = cString(cap.bus_info)
        capabilities = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
    }

    var canCapture: Bool { capabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
    var canCaptureMultiplanar: Bool { capabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0 }
    var canStream: Bool { capabilities & UInt32(V4L2_CAP_STREAMING) != 0 }
}

/// One ENUM_FMT entry.
struct FormatDescription: Equatable {
    var fourcc: FourCC
    var name: String
    var compressed: Bool
    var emulated: Bool

    init(fourcc: FourCC, name: String, compressed: Bool = false, emulated: Bool = false) {
        self.fourcc = fourcc
        self.name = name
        self.compressed = compressed
        self.emulated = emulated
    }

    init(_ d: v4l2_fmtdesc) {
        fourcc = FourCC(rawValue: d.pixelformat)
        name = cString(d.description)
        compressed = d.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0
        emulated = d.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0
    }
}

/// A NUL-terminated string from a fixed-size C char array (imported as a tuple).
func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Synchronization
import Platform
import Settings

/// A V4L2 capture device (USB UVC camera, libcamerify'd CSI camera, vivid), after pikvm/ustreamer:
/// the settings say what to capture; the runtime (descriptor, format, mmap'd buffers) exists between
/// `open()` and `close()` only, and the capture thread closes and reopens a lost camera.
///
/// - `open()`: QUERYCAP (capture + streaming), the fixed size in the best luma format (S_FMT), the rate
///   (S_PARM), controls by name, `settings.buffers` mmap buffers, all queued, STREAMON. A missing or
///   busy device throws `CaptureError.deviceLost`; one that cannot give the settings throws `UsageError`.
/// - `nextFrame()`: poll up to `settings.frameTimeoutMs`, dequeue every ready buffer and keep only the
///   newest (older ones go straight back to the driver), copy its luma out, requeue it, return the frame
///   stamped with the driver's sequence and monotonic timestamp. ENODEV/EIO/POLLERR → `.deviceLost`,
///   no frame in time → `.timeout`.
/// - `close()`: STREAMOFF, munmap, close; never fails, even on a dead device.
public final class V4L2Camera: FrameSource {
    public let device: String
    public let settings: CaptureSettings
    public var name: String { device }
    public var isLive: Bool { true }
    public var isReconnectable: Bool { true }

    /// Frames the driver delivered that were skipped: older ones replaced by a newer one when draining,
    /// buffers flagged as corrupt, short or undecodable ones.
    public private(set) var skippedFrames: UInt64 = 0

    private let logger: Logger
    private let calls: any V4L2Calls
    private var session: Session?
    /// The controls, for other threads: the open device is lent to it between open and close.
    public let controlPanel: CameraControlPanel
    public var liveControls: (any LiveCameraControls)? { controlPanel }

    public convenience init(device: String, settings: CaptureSettings, logger: Logger) {
        self.init(device: device, settings: settings, logger: logger, calls: SystemV4L2.calls())
    }

    /// With another implementation of the V4L2 calls (tests use a scripted device).
    public init(device: String, settings: CaptureSettings, logger: Logger, calls: any V4L2Calls) {
        self.device = device
        self.settings = settings
        self.logger = logger
        self.calls = calls
        self.controlPanel = CameraControlPanel(name: device, logger: logger)
    }

    deinit { close() }

    /// The format in use while open (for logs and tests).
    var format: NegotiatedFormat? { session?.format }

    /// "YUYV 640x480" while open: the negotiated format, for `scangate doctor`.
    public var formatDescription: String? { format.map { "\($0.fourcc) \($0.width)x\($0.height)" } }

    // MARK: open

    public func open() throws {
        close()
        let opened: V4L2Device
        switch V4L2Device.open(device, calls: calls) {
        case .success(let d): opened = d
        case .failure(let e) where [ENOTTY, EISDIR, ENOTDIR].contains(e.errno.rawValue):
            // libv4l2's QUERYCAP failed, or the path is no device node: a configuration error, not a loss.
            throw UsageError("--camera \(device) is not a V4L2 device (\(e.errno))")
        case .failure(let e):
            throw CaptureError.deviceLost(device: device, reason: V4L2Camera.reason(e))
        }
        let session = Session(device: opened)
        do {
            try start(session)
        } catch {
            session.release(logger: logger)
            if let e = error as? SystemError {
                throw CaptureError.deviceLost(device: device, reason: V4L2Camera.reason(e))
            }
            throw error
        }
        self.session = session
    }

    private func start(_ session: Session) throws {
        let device = session.device
        let capability = try device.capability().mapError { e -> Error in
            // A node that answers but is no V4L2 device (a tty, a file) is a configuration error.
            e.errno.rawValue == ENOTTY || e.errno == .invalidArgument
                ? UsageError("--camera \(self.device) is not a V4L2 device (\(e.errno))") : e
        }.get()
        guard capability.canCapture else {
            throw UsageError("--camera \(self.device) (\(capability.card), driver \(capability.driver)) "
                             + (capability.canCaptureMultiplanar
                                ? "captures only multi-planar, which ScanGate does not read"
                                : "is not a video capture node (an output or metadata node?)"))
        }
        guard capability.canStream else {
            throw UsageError("--camera \(self.device) (\(capability.card)) cannot stream (no V4L2 streaming I/O)")
        }
        let offers = try CameraOffers.query(device)
        let negotiation = FormatNegotiation(device: device, settings: settings, logger: logger)
        let format = try negotiation.negotiate(offers)
        _ = try negotiation.setFrameRate(offers, format: format)
        try CameraControls(device: device).apply(settings.controls, logger: logger)
        session.format = format
        if format.layout == .jpeg {
            do { session.jpeg = try JPEGGrayDecoder() } catch { throw UsageError("\(error)") }
        }
        let granted = try session.buffers.allocate(count: settings.buffers)
        if granted != settings.buffers {
            logger.debug("camera \(self.device): the driver gave \(granted) buffers (asked \(settings.buffers))")
        }
        guard format.layout == .jpeg || session.buffers.mappings.allSatisfy({
            $0.length >= format.layout.requiredBytes(width: format.width, height: format.height,
                                                     bytesPerLine: format.bytesPerLine)
        }) else {
            throw SystemError("VIDIOC_QUERYBUF (buffers smaller than the frame)", self.device, .ioError)
        }
        try session.buffers.queueAll()
        try device.streamOn().get()
        session.streaming = true
        controlPanel.attach(device)
        logger.info("camera \(self.device) (\(capability.card), driver \(capability.driver)): streaming "
                    + "\(format.fourcc) \(format.width)x\(format.height) with \(granted) buffers"
                    + (calls is KernelV4L2Calls ? ", through libcamera's v4l2-compat" : ""))
    }

    // MARK: frames

    /// Longest single poll: bounds how long a shutdown request waits.
    static let pollSliceMs: Double = 200
    public func nextFrame(until stop: StopToken) throws -> Frame? {
        guard let session else { throw CaptureError.deviceLost(device: device, reason: "not open") }
        let timeout = settings.frameTimeoutMs
        let deadline = MonotonicInstant.now().adding(milliseconds: Double(timeout))
        while true {
            let remaining = deadline.milliseconds(since: .now())
            guard remaining > 0 else { throw timeoutError(session) }
            if stop.isStopped { return nil }
            // Poll in short slices so a shutdown request is noticed within one slice.
            let slice = min(remaining.rounded(.up), V4L2Camera.pollSliceMs)
            let revents: Int16
            switch session.device.poll(timeoutMilliseconds: Int32(slice)) {
            case .success(let r): revents = r
            case .failure(let e): throw CaptureError.deviceLost(device: device, reason: V4L2Camera.reason(e))
            }
            if revents == 0 {
                if remaining > slice { continue }
                throw timeoutError(session)
            }
            if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                throw CaptureError.deviceLost(device: device, reason: "poll reported an error (revents 0x\(String(revents, radix: 16)))")
            }
            guard let buffer = try drainToNewest(session) else { continue }
            let dequeuedAt = MonotonicInstant.now()
            let luma = takeLuma(session, buffer)
            do {
                try session.buffers.queue(Int(buffer.index))
            } catch {
                throw CaptureError.deviceLost(device: device, reason: V4L2Camera.reason(error))
            }
            guard let luma, let format = session.format else { skippedFrames += 1; continue }
            return Frame(width: format.width, height: format.height, sequence: UInt64(buffer.sequence),
                         captureTime: V4L2Camera.captureTime(buffer, fallback: dequeuedAt),
                         dequeuedAt: dequeuedAt, luma: luma)
        }
    }

    /// Dequeues every ready buffer; all but the newest go straight back to the driver.
    private func drainToNewest(_ session: Session) throws -> v4l2_buffer? {
        var newest: v4l2_buffer?
        do {
            while let buffer = try session.buffers.dequeue() {
                if let older = newest {
                    try session.buffers.queue(Int(older.index))
                    skippedFrames += 1
                }
                newest = buffer
            }
        } catch {
            throw CaptureError.deviceLost(device: device, reason: V4L2Camera.reason(error))
        }
        return newest
    }

    /// The frame's luma, or nil for a buffer that cannot be a frame (flagged corrupt, short, bad JPEG).
    private func takeLuma(_ session: Session, _ buffer: v4l2_buffer) -> [UInt8]? {
        guard let format = session.format else { return nil }
        if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
            logger.debug("camera \(device): frame \(buffer.sequence) flagged corrupt by the driver; skipped")
            return nil
        }
        let bytes = session.buffers.bytes(of: buffer)
        switch format.layout {
        case .packed, .rgb:
            guard let luma = format.layout.extract(from: bytes, width: format.width, height: format.height,
                                                   bytesPerLine: format.bytesPerLine) else {
                logger.warning("camera \(device): short frame (\(bytes.count) bytes for \(format.fourcc) "
                               + "\(format.width)x\(format.height)); skipped", rateLimitKey: "v4l2-short-\(device)")
                return nil
            }
            return luma
        case .jpeg:
            guard let decoder = session.jpeg else { return nil }
            do {
                return try decoder.decode(bytes, width: format.width, height: format.height)
            } catch {
                logger.warning("camera \(device): \(error); frame skipped", rateLimitKey: "v4l2-jpeg-\(device)")
                return nil
            }
        }
    }

    /// No frame in time: a device that no longer answers is lost, a live one just timed out.
    private func timeoutError(_ session: Session) -> CaptureError {
        if case .failure(let e) = session.device.capability() {
            return .deviceLost(device: device, reason: "no frame for \(settings.frameTimeoutMs) ms and \(V4L2Camera.reason(e))")
        }
        return .timeout(device: device, milliseconds: settings.frameTimeoutMs)
    }

    /// The driver's timestamp when it is on CLOCK_MONOTONIC (as V4L2 stamps since Linux 3.x), else `fallback`.
    static func captureTime(_ buffer: v4l2_buffer, fallback: MonotonicInstant) -> MonotonicInstant {
        let clock = buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK)
        let seconds = buffer.timestamp.tv_sec, micros = buffer.timestamp.tv_usec
        guard clock == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC), seconds >= 0, micros >= 0,
              seconds > 0 || micros > 0 else { return fallback }
        return MonotonicInstant(nanoseconds: UInt64(seconds) * 1_000_000_000 + UInt64(micros) * 1000)
    }

    // MARK: close

    public func close() {
        guard let session else { return }
        self.session = nil
        controlPanel.detach()
        session.release(logger: logger)
    }

    /// "VIDIOC_DQBUF /dev/video0: No such device (ENODEV)", or a plain description.
    static func reason(_ error: Error) -> String {
        if let e = error as? SystemError {
            switch e.errno.rawValue {
            case EACCES: return "\(e) (is the user in group video?)"
            case EBUSY: return "\(e) (another program is using the camera)"
            default: return e.description
            }
        }
        return "\(error)"
    }

    /// The runtime of one open camera.
    private final class Session {
        let device: V4L2Device
        let buffers: CaptureBuffers
        var format: NegotiatedFormat?
        var jpeg: JPEGGrayDecoder?
        var streaming = false

        init(device: V4L2Device) {
            self.device = device
            self.buffers = CaptureBuffers(device: device)
        }

        /// STREAMOFF, munmap, close: everything released, errors only logged.
        func release(logger: Logger) {
            if streaming, case .failure(let e) = device.streamOff() {
                logger.debug("camera \(device.path): \(e)")
            }
            streaming = false
            buffers.unmapAll(logger: logger)
            if case .failure(let e) = device.close() { logger.debug("camera \(device.path): \(e)") }
            jpeg = nil
        }
    }
}

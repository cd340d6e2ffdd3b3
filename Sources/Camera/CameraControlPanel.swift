import Core
import Platform
import Settings

/// The controls of one `V4L2Camera`, for threads other than the capture thread (the status socket's
/// `controls` and `control` requests, doctor).
///
/// Ownership: the camera owns the descriptor. While it is open it lends its `V4L2Device` to the panel
/// (`attach`, after the configured controls are set at open) and takes it back before it closes the
/// descriptor (`detach`, under the same lock), so a request never issues an ioctl on a closed or reused
/// descriptor; requests and the lending are serialised by one lock. The capture thread's own ioctls
/// (DQBUF, QBUF) do not take it: VIDIOC_S_CTRL and VIDIOC_G_CTRL on the same descriptor from another
/// thread are allowed by V4L2 (and libv4l2 takes its own lock around them).
///
/// Tried values: a value set through the panel holds for the life of the camera object. When the camera
/// is reopened after it vanished, `attach` sets the configured `camera-control`s first (as at every
/// open), then every value tried since, in the order tried (a name tried twice: its last value), so the
/// picture the installer aimed with comes back. A reload whose camera settings changed (a saved
/// `camera-control` among them) builds a new camera: the tried values end there, the saved ones are in
/// the config.
public final class CameraControlPanel: LiveCameraControls, @unchecked Sendable {
    // @unchecked: `State` holds the lent V4L2Device (its `V4L2Calls` is a class); it is only touched under
    // `state`'s lock, and the camera never uses the device for controls while it is lent.
    private struct State: @unchecked Sendable {
        var device: V4L2Device?
        var tried: [CameraControl] = []
    }
    private let state = PosixMutex(State())
    private let name: String
    private let logger: Logger

    init(name: String, logger: Logger) {
        self.name = name
        self.logger = logger
    }

    /// The camera opened: lends the device and sets the values tried before a reopen (their failures only
    /// logged: the camera may have come back as another model).
    func attach(_ device: V4L2Device) {
        state.withLock { s in
            s.device = device
            guard !s.tried.isEmpty else { return }
            let controls = CameraControls(device: device)
            do {
                let available = try controls.list()
                for request in s.tried {
                    let control = try controls.resolve(request, in: available)
                    try controls.set(control, request.value)
                }
                logger.info("camera \(name): tried controls set again after the reopen: "
                            + s.tried.map { "\($0.name)=\($0.value)" }.joined(separator: ", "))
            } catch {
                logger.warning("camera \(name): setting the tried controls again after the reopen: \(error)")
            }
        }
    }

    /// The camera is about to close its descriptor: no request uses it from now on.
    func detach() {
        state.withLock { $0.device = nil }
    }

    public func readings() throws(UsageError) -> [CameraControlReading] {
        try state.withLock { s throws(UsageError) -> [CameraControlReading] in
            guard let device = s.device else { throw notOpen() }
            do throws(SystemError) {
                return try CameraControls(device: device).readings()
            } catch {
                throw UsageError("camera \(name): reading its controls: \(error)")
            }
        }
    }

    public func set(name requested: String, value: Int) throws(UsageError) -> CameraControlReading {
        try state.withLock { s throws(UsageError) -> CameraControlReading in
            guard let device = s.device else { throw notOpen() }
            let controls = CameraControls(device: device)
            do {
                let control = try controls.resolve(CameraControl(name: requested, value: value), in: try controls.list())
                try controls.set(control, value)
                s.tried.removeAll { $0.name == control.key }
                s.tried.append(CameraControl(name: control.key, value: value))
                let reading = controls.reading(control)
                logger.notice("camera \(name): \(control.key) = \(value) tried over the status socket (reads back "
                              + "\(reading.value.map { String($0) } ?? "nothing"))")
                return reading
            } catch let e as UsageError {
                throw e
            } catch {
                throw UsageError("camera \(name): setting \(requested)=\(value): \(error)")
            }
        }
    }

    /// The controls that matter for aiming and scanning (exposure, gain, focus, brightness, contrast, their
    /// automatic modes, ...: the ones `list-cameras` shows without --all-controls).
    public func scanningReadings() throws(UsageError) -> [CameraControlReading] {
        try readings().filter { reading in ControlInfo.scanningKeywords.contains { reading.key.contains($0) } }
    }

    /// The values tried so far, in order (for tests and logs).
    public var tried: [CameraControl] { state.withLock { $0.tried } }

    private func notOpen() -> UsageError {
        UsageError("camera \(name) is not open now (it is being reopened); try again in a moment")
    }
}

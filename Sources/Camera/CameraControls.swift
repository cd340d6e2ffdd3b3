#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform
import Settings

/// One V4L2 control as VIDIOC_QUERYCTRL describes it.
struct ControlInfo: Equatable {
    enum Kind: Equatable {
        case integer, boolean, menu, integerMenu, button, other(UInt32)

        init(_ raw: UInt32) {
            switch raw {
            case V4L2_CTRL_TYPE_INTEGER.rawValue: self = .integer
            case V4L2_CTRL_TYPE_BOOLEAN.rawValue: self = .boolean
            case V4L2_CTRL_TYPE_MENU.rawValue: self = .menu
            case V4L2_CTRL_TYPE_INTEGER_MENU.rawValue: self = .integerMenu
            case V4L2_CTRL_TYPE_BUTTON.rawValue: self = .button
            default: self = .other(raw)
            }
        }

        /// Controls a single integer value can set (S_CTRL).
        var takesInteger: Bool { self == .integer || self == .boolean || self == .menu || self == .integerMenu }

        var name: String {
            switch self {
            case .integer: return "int"
            case .boolean: return "bool"
            case .menu: return "menu"
            case .integerMenu: return "intmenu"
            case .button: return "button"
            case .other(let raw): return "type \(raw)"
            }
        }
    }

    var id: UInt32
    /// The driver's name: "Exposure Time, Absolute".
    var name: String
    /// The name as v4l2-ctl writes it: "exposure_time_absolute".
    var key: String
    var kind: Kind
    var minimum: Int
    var maximum: Int
    var step: Int
    var defaultValue: Int
    var flags: UInt32

    init(id: UInt32, name: String, kind: Kind, minimum: Int, maximum: Int, step: Int, defaultValue: Int,
         flags: UInt32 = 0) {
        self.id = id
        self.name = name
        self.key = ControlInfo.normalise(name)
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
    }

    init(_ q: v4l2_queryctrl) {
        self.init(id: q.id, name: cString(q.name), kind: Kind(q.type), minimum: Int(q.minimum),
                  maximum: Int(q.maximum), step: Int(q.step), defaultValue: Int(q.default_value), flags: q.flags)
    }

    var isReadOnly: Bool { flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) != 0 }
    var isInactive: Bool { flags & UInt32(V4L2_CTRL_FLAG_INACTIVE) != 0 }

    /// Lower case; every run of other characters becomes one '_' between words (as v4l2-ctl names them).
    static func normalise(_ name: String) -> String { CameraControlName.normalise(name) }

    /// Names that matter when scanning codes (shown by `list-cameras` without --all-controls).
    static let scanningKeywords = ["exposure", "focus", "gain", "brightness", "contrast", "sharpness", "gamma",
                                   "white_balance", "zoom", "backlight", "power_line", "iso"]

    var mattersForScanning: Bool { ControlInfo.scanningKeywords.contains { key.contains($0) } }
}

/// Reads and sets a device's controls by name.
struct CameraControls {
    let device: V4L2Device

    /// Every enabled control (QUERYCTRL with V4L2_CTRL_FLAG_NEXT_CTRL), without the class headings.
    func list() throws(SystemError) -> [ControlInfo] {
        var out: [ControlInfo] = []
        let next = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
        var id = next
        for _ in 0..<1024 {
            var q = v4l2_queryctrl()
            q.id = id
            switch device.ioctl(.queryControl, q) {
            case .success(let answer):
                let info = ControlInfo(answer)
                if answer.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0,
                   answer.type != V4L2_CTRL_TYPE_CTRL_CLASS.rawValue {
                    out.append(info)
                }
                // The driver must move on; a driver that repeats an id would loop forever otherwise.
                guard answer.id & ~next > id & ~next else { return out }
                id = answer.id | next
            case .failure(let e) where e.errno == .invalidArgument:
                return out
            case .failure(let e) where e.errno.rawValue == ENOTTY:
                // No controls at all (vimc's capture nodes; libcamera's v4l2-compat).
                return out
            case .failure(let e):
                throw e
            }
        }
        return out
    }

    func value(_ control: ControlInfo) -> Result<Int, SystemError> {
        var c = v4l2_control()
        c.id = control.id
        return device.ioctl(.getControl, c).map { Int($0.value) }
    }

    /// Sets each requested control in order. A name or value the device does not take is a `UsageError`
    /// that lists what it has; a failing device is a `SystemError`.
    func apply(_ requested: [CameraControl], logger: Logger) throws -> Void {
        guard !requested.isEmpty else { return }
        let available = try list()
        for request in requested {
            let control = try resolve(request, in: available)
            try set(control, request.value)
            logger.info("camera \(device.path): \(control.key) = \(request.value)"
                        + (control.isInactive ? " (inactive now: an automatic mode may override it)" : ""))
        }
    }

    /// The control `request` names, when it is one that can take `request.value`; else a `UsageError`
    /// naming the control and what is allowed.
    func resolve(_ request: CameraControl, in available: [ControlInfo]) throws(UsageError) -> ControlInfo {
        let key = ControlInfo.normalise(request.name)
        guard let control = available.first(where: { $0.key == key }) else {
            let names = available.filter { $0.kind.takesInteger }.map(\.key)
            throw UsageError("camera \(device.path) has no control '\(request.name)'; it has: "
                             + (names.isEmpty ? "none" : names.joined(separator: ", ")))
        }
        guard control.kind.takesInteger else {
            throw UsageError("camera \(device.path): control \(control.key) is a \(control.kind.name) control; "
                             + "only int, bool and menu controls can be set")
        }
        guard !control.isReadOnly else {
            throw UsageError("camera \(device.path): control \(control.key) is read-only")
        }
        guard (control.minimum...control.maximum).contains(request.value) else {
            throw UsageError("camera \(device.path): \(control.key)=\(request.value) is out of range; "
                             + "allowed \(control.minimum)..\(control.maximum)"
                             + (control.step > 1 ? " in steps of \(control.step)" : ""))
        }
        return control
    }

    /// VIDIOC_S_CTRL: a value the driver refuses is a `UsageError` with the range; a failing device a `SystemError`.
    func set(_ control: ControlInfo, _ value: Int) throws -> Void {
        var c = v4l2_control()
        c.id = control.id
        c.value = Int32(clamping: value)
        switch device.ioctl(.setControl, c) {
        case .success:
            return
        case .failure(let e) where e.errno == .invalidArgument || e.errno.rawValue == ERANGE
                                   || e.errno == .permissionDenied || e.errno.rawValue == EPERM:
            throw UsageError("camera \(device.path): cannot set \(control.key)=\(value): \(e.errno) "
                             + "(allowed \(control.minimum)..\(control.maximum), step \(control.step))")
        case .failure(let e):
            throw e
        }
    }

    /// The reading of `control` as the status socket and doctor show it (the value read now).
    func reading(_ control: ControlInfo) -> CameraControlReading {
        let current: Int?
        if case .success(let v) = value(control) { current = v } else { current = nil }
        return CameraControlReading(key: control.key, name: control.name, type: control.kind.name, minimum: control.minimum,
                                    maximum: control.maximum, step: control.step, defaultValue: control.defaultValue,
                                    value: current)
    }

    /// Every control a single integer sets, read now.
    func readings() throws(SystemError) -> [CameraControlReading] {
        try list().filter { $0.kind.takesInteger }.map(reading)
    }
}

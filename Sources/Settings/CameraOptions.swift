import Core

extension OptionTable {
    public static let camera: [OptionSpec] = [
        OptionSpec("camera", .camera, .value(placeholder: "SOURCE"), default: "/dev/video0",
                   help: "frame source: /dev/videoN, /dev/v4l/by-id/..., sim:PAYLOAD, sim:FILE.scenario, replay:FILE.y4m, replay:DIR",
                   apply: { s, v in
                       guard !v.isEmpty else { throw OptionValueError("is empty; give a device, sim:... or replay:...") }
                       s.capture.camera = v
                   },
                   show: { $0.capture.camera }),
        OptionSpec("width", .camera, .value(placeholder: "PIXELS"), default: "640",
                   help: "frame width (fixed; the camera must offer it)",
                   apply: { s, v in s.capture.width = try ParseValue.int(v, in: 16...4096) },
                   show: { String($0.capture.width) }),
        OptionSpec("height", .camera, .value(placeholder: "PIXELS"), default: "480",
                   help: "frame height",
                   apply: { s, v in s.capture.height = try ParseValue.int(v, in: 16...4096) },
                   show: { String($0.capture.height) }),
        OptionSpec("fps", .camera, .value(placeholder: "RATE"), default: "15",
                   help: "frames per second asked of the camera; pacing of sim and replay",
                   apply: { s, v in s.capture.fps = try ParseValue.double(v, in: 0.5...240) },
                   show: { ParseValue.format($0.capture.fps) }),
        OptionSpec("fast", .camera, .flag, default: "false",
                   help: "sim/replay: run as fast as decoding goes, drop nothing (timestamps stay frame/fps)",
                   apply: { s, v in s.capture.fast = try ParseValue.bool(v) },
                   show: { String($0.capture.fast) }),
        OptionSpec("loop", .camera, .flag, default: "false",
                   help: "sim/replay: start again at the end instead of exiting",
                   apply: { s, v in s.capture.loop = try ParseValue.bool(v) },
                   show: { String($0.capture.loop) }),
        OptionSpec("max-frames", .camera, .value(placeholder: "N"), default: "0",
                   help: "stop after N frames (0: no limit)",
                   apply: { s, v in s.capture.maxFrames = UInt64(try ParseValue.int(v, in: 0...Int(Int32.max))) },
                   show: { String($0.capture.maxFrames) }),
        OptionSpec("camera-control", .camera, .value(placeholder: "NAME=VALUE"), default: "",
                   repeatable: true,
                   help: "V4L2 control set at open (exposure_time_absolute, focus_absolute, gain, ...); repeatable",
                   apply: { s, v in
                       let parts = v.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
                       guard parts.count == 2, !parts[0].isEmpty, let value = Int(parts[1]) else {
                           throw OptionValueError("'\(v)' is not NAME=INTEGER")
                       }
                       // check-config lists the controls comma-separated: a name with a comma would not read back.
                       guard !parts[0].contains(",") else {
                           throw OptionValueError("'\(v)': a control name has no ',' (give one NAME=INTEGER per camera-control)")
                       }
                       s.capture.controls.append(CameraControl(name: parts[0], value: value))
                   },
                   show: { $0.capture.controls.map { "\($0.name)=\($0.value)" }.joined(separator: ",") }),
        OptionSpec("camera-tamper", .camera, .flag, default: "false",
                   help: "report the camera covered (dark or uniform view) or turned away (the scene changed wholesale) once it lasts camera-tamper-after-s: an OSDP tamper, a status alarm",
                   apply: { s, v in s.cameraTamper.enabled = try ParseValue.bool(v) },
                   show: { String($0.cameraTamper.enabled) }),
        OptionSpec("camera-tamper-after-s", .camera, .value(placeholder: "SECONDS"), default: "10",
                   help: "camera-tamper: how long the view must stay covered or changed (2-600 s; a person at the reader is shorter)",
                   apply: { s, v in s.cameraTamper.afterSeconds = try ParseValue.int(v, in: CameraTamperSettings.afterRange) },
                   show: { String($0.cameraTamper.afterSeconds) }),
        OptionSpec("camera-tamper-dark-level", .camera, .value(placeholder: "LUMA"), default: "24",
                   help: "camera-tamper: a mean luma below this (1-128 of 255) is a covered lens",
                   apply: { s, v in s.cameraTamper.darkLevel = try ParseValue.int(v, in: CameraTamperSettings.darkRange) },
                   show: { String($0.cameraTamper.darkLevel) }),
        OptionSpec("camera-buffers", .camera, .value(placeholder: "N"), default: "3",
                   help: "V4L2 mmap buffers (2-4): few buffers, low latency",
                   apply: { s, v in s.capture.buffers = try ParseValue.int(v, in: 2...4) },
                   show: { String($0.capture.buffers) }),
        OptionSpec("camera-timeout-ms", .camera, .value(placeholder: "MS"), default: "2000",
                   help: "no frame for this long means the camera is lost (it is then reopened)",
                   apply: { s, v in s.capture.frameTimeoutMs = try ParseValue.int(v, in: 100...60000) },
                   show: { String($0.capture.frameTimeoutMs) }),
        OptionSpec("pixel-format", .camera, .value(placeholder: "FORMAT"), default: "auto",
                   help: "V4L2 format to ask for: auto (best offered: GREY, YUYV, UYVY, NV12, YU12, YV12, RGB3, BGR3, then MJPG), GREY, YUYV, UYVY, NV12, YU12, RGB3, BGR3, MJPG",
                   apply: { s, v in
                       guard let format = CapturePixelFormat(name: v.trimmingSpaces) else {
                           let names = CapturePixelFormat.allCases.map(\.rawValue).joined(separator: ", ")
                           throw OptionValueError("'\(v)' is not one of \(names)")
                       }
                       s.capture.pixelFormat = format
                   },
                   show: { $0.capture.pixelFormat.rawValue }),
    ]
}

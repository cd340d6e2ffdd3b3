#if canImport(Glibc)
import Glibc
#endif
import Camera
import Config
import Core
import Decoding
import Platform
import Simulator
import Components
import Settings
import Catalog
import Credentials

/// Doctor's camera rows: what the V4L2 node offers, the source opened the way `run` opens it, a test
/// capture of up to `captureSeconds`, and the codes zbar finds in those frames. Works on every source
/// (`sim:`, `replay:`, V4L2), so the simulator can stand in for a camera in tests.
struct CameraDoctor {
    let settings: RunSettings
    let options: DoctorOptions
    let logger: Logger
    let system: DoctorSystem

    private var capture: CaptureSettings { settings.capture }
    private var camera: String { capture.camera }
    private var isV4L2: Bool { !camera.hasPrefix("sim:") && !camera.hasPrefix("replay:") }

    func run() -> [DoctorRow] {
        var rows: [DoctorRow] = []
        if isV4L2 {
            let formats = formatsRow()
            rows.append(formats)
            if formats.result == .fail { return rows + skipped(after: "camera device") }
        }
        let source: FrameSource
        do {
            source = try makeSource()
            try source.open()
        } catch {
            rows.append(.fail(.camera, "camera open", Self.describe(error), fix: openFix(error)))
            return rows + skipped(after: "camera open")
        }
        defer { source.close() }
        rows.append(.pass(.camera, "camera open", openedDetail(source)))
        if let v4l2 = source as? V4L2Camera { rows += controlRows(v4l2.controlPanel) }
        let (captureRow, codes) = grab(from: source)
        rows.append(captureRow)
        if captureRow.result == .fail {
            rows.append(.skip(.camera, "camera decode", "not tried: no frame captured"))
        } else {
            rows.append(.pass(.camera, "camera decode", codes.isEmpty
                ? "nothing in view (to test, show a code: `scangate make-code HELLO` draws one)"
                : "in view: " + codes.map(\.text).joined(separator: "; ")))
        }
        return rows
    }

    // MARK: - Steps

    private func makeSource() throws -> FrameSource {
        if isV4L2 { return V4L2Camera(device: camera, settings: capture, logger: logger, calls: system.v4l2) }
        return try SourceFactory.make(capture, logger: logger)
    }

    /// V4L2: the card, driver, formats, sizes and rates, as `list-cameras` finds them.
    private func formatsRow() -> DoctorRow {
        do throws(SystemError) {
            guard let summary = try CameraListing.offersSummary(camera, calls: system.v4l2) else {
                return .fail(.camera, "camera device", "\(camera) is not a video capture node",
                             fix: "give --camera the camera's capture node (`scangate list-cameras` lists them; "
                                + "a UVC camera's second node is for metadata)")
            }
            return .pass(.camera, "camera device", "\(camera): \(summary)")
        } catch {
            let fix: String
            if error.errno.rawValue == ENOTTY {
                fix = "\(camera) is no V4L2 device: give --camera a /dev/videoN from `scangate list-cameras`"
            } else {
                fix = DoctorFixes.forOpen(error.errno, device: camera, group: DoctorFixes.videoGroup,
                                          missing: DoctorFixes.cameraMissing(camera, present: system.videoNodes()))
                    ?? "check the camera with `scangate list-cameras` and `dmesg` (USB errors)"
            }
            return .fail(.camera, "camera device", "\(error)", fix: fix)
        }
    }

    /// One row per control that matters for aiming (exposure, gain, focus, brightness, contrast, their
    /// automatic switches, ...), read from the camera just opened: type, range, step, default, current value.
    func controlRows(_ panel: CameraControlPanel) -> [DoctorRow] {
        do throws(UsageError) {
            let readings = try panel.scanningReadings()
            guard !readings.isEmpty else {
                return [.pass(.camera, "camera controls", "\(camera) offers no exposure, gain, focus or brightness controls")]
            }
            return readings.map { r in
                .pass(.camera, "control \(r.key)", "\(r.type): \(r.rangeText)")
            }
        } catch {
            return [.warn(.camera, "camera controls", error.message, fix: "`scangate list-cameras` lists them")]
        }
    }

    private func openedDetail(_ source: FrameSource) -> String {
        if let v4l2 = source as? V4L2Camera {
            return "\(camera): streaming \(v4l2.formatDescription ?? "\(capture.width)x\(capture.height)")"
        }
        let pace = source.isLive ? "" : ", as fast as decoded (--fast)"
        if let sim = source as? SimulatedCamera {
            return "\(source.name): simulated camera, \(sim.width)x\(sim.height) at \(fps(sim.fps)) fps\(pace)"
        }
        return "\(source.name): open\(pace)"
    }

    private struct SeenCode {
        var symbol: DecodedSymbol
        var frames = 1
        /// credential-format is on: every payload is a possible pass, shown by its fingerprint only.
        var concealed = false
        /// "HELLO (QR-Code, in 30 frames)"; the table escapes control characters, binary payloads are hex.
        var text: String {
            let payload: String
            if concealed {
                payload = TokenFingerprint.describe(symbol.data)
            } else if let utf8 = String(validating: symbol.data, as: UTF8.self) {
                payload = Logger.escape(utf8.count > 80 ? String(utf8.prefix(80)) + "..." : utf8)
            } else {
                payload = "binary \(symbol.data.count) bytes 0x" + Hex.string(symbol.data.prefix(40))
                    + (symbol.data.count > 40 ? "..." : "")
            }
            return "\(payload) (\(symbol.symbology.zbarName), in \(frames) frame\(frames == 1 ? "" : "s"))"
        }
    }

    /// Frames for up to `captureSeconds` (a finite source may end first), each decoded with the
    /// configured decoder (zxing or zbar).
    private func grab(from source: FrameSource) -> (DoctorRow, [SeenCode]) {
        let decoder: Decoder
        do {
            decoder = try StreamDecoder.bare(settings: settings.decoder)
        } catch {
            return (.fail(.camera, "camera capture", "\(settings.decoder.engine.rawValue): \(error)",
                          fix: "check --decoder and --symbologies"), [])
        }
        let start = MonotonicInstant.now()
        let deadline = start.adding(milliseconds: options.captureSeconds * 1000)
        var frames = 0
        var sizes: [String] = []
        var codes: [SeenCode] = []
        var failure: Error?
        let stop = StopToken()
        while MonotonicInstant.now() < deadline {
            let frame: Frame
            do {
                guard let next = try source.nextFrame(until: stop) else { break }
                frame = next
            } catch {
                failure = error
                break
            }
            frames += 1
            let size = "\(frame.width)x\(frame.height)"
            if !sizes.contains(size) { sizes.append(size) }
            for symbol in decoder.decode(frame) {
                if let i = codes.firstIndex(where: { $0.symbol.key == symbol.key }) {
                    codes[i].frames += 1
                } else {
                    codes.append(SeenCode(symbol: symbol, concealed: settings.credential.format != .off))
                }
            }
        }
        let seconds = MonotonicInstant.now().milliseconds(since: start) / 1000
        let got = "\(frames) frame\(frames == 1 ? "" : "s") of \(sizes.isEmpty ? "-" : sizes.joined(separator: ", ")) "
            + "in \(format(seconds)) s"
        if let failure {
            let detail = frames == 0 ? Self.describe(failure) : "\(got), then \(Self.describe(failure))"
            return (.fail(.camera, "camera capture", detail, fix: captureFix(failure)), codes)
        }
        guard frames > 0 else {
            return (.fail(.camera, "camera capture", "no frame from \(camera)",
                         fix: "the source ended at once: check the recording or scenario (--camera)"), [])
        }
        return (.pass(.camera, "camera capture", got), codes)
    }

    // MARK: - Fixes

    private func openFix(_ error: Error) -> String {
        if error is UsageError {
            return isV4L2
                ? "ask for what the camera offers (camera formats; `scangate list-cameras`): --width, --height, "
                    + "--fps, --pixel-format"
                : "correct --camera (sim:PAYLOAD, sim:FILE.scenario, replay:FILE.y4m, replay:DIR; scangate run --help)"
        }
        return captureFix(error)
    }

    private func captureFix(_ error: Error) -> String {
        switch error {
        case CaptureError.timeout:
            return "the camera sends no frames: check its USB cable and power (a powered hub), then try a lower "
                + "--fps, a smaller --width/--height or --pixel-format MJPG (less USB bandwidth)"
        case CaptureError.deviceLost(_, let reason):
            if reason.contains("(EACCES)") || reason.contains("(EPERM)") {
                return "add user \(DoctorFixes.serviceUser) to group \(DoctorFixes.videoGroup)"
            }
            if reason.contains("(EBUSY)") {
                return "held by another process (fuser -v \(camera)); stop it first, e.g. sudo systemctl stop scangate"
            }
            if reason.contains("(ENOENT)") || reason.contains("(ENODEV)") {
                return DoctorFixes.cameraMissing(camera, present: system.videoNodes())
            }
            return "the camera failed: check its cable and power; `dmesg` shows USB resets"
        case CaptureError.badInput, is UsageError:
            return "correct --camera (scangate run --help lists the sources)"
        default:
            return "check the camera with `scangate list-cameras` and `dmesg`"
        }
    }

    private func skipped(after check: String) -> [DoctorRow] {
        ["camera device", "camera open", "camera capture", "camera decode"]
            .drop { $0 != check }.dropFirst()
            .map { DoctorRow.skip(.camera, $0, "not tried: \(check) failed") }
    }

    private func fps(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : format(value)
    }

    private func format(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// The error without "camera lost:" (doctor opens the camera once; nothing was lost).
    static func describe(_ error: Error) -> String {
        switch error {
        case let e as UsageError: return e.message
        case CaptureError.deviceLost(let device, let reason): return "\(device): \(reason)"
        case CaptureError.timeout(let device, let ms): return "\(device): no frame for \(ms) ms"
        default: return "\(error)"
        }
    }
}

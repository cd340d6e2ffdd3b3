import Camera
import Core
#if canImport(Glibc)
import Glibc
#endif

/// `scangate list-cameras [--all-controls]`: every V4L2 capture device with its stable names, formats,
/// sizes, rates and controls, so users can pick --camera, --width/--height/--fps, --pixel-format and
/// --camera-control values. Exits 0 even when there is no camera.
public enum ListCamerasCommand {
    static let usage = """
        usage: scangate list-cameras [--all-controls]
          Lists every V4L2 capture device (/dev/videoN and its /dev/v4l/by-id names) with its formats,
          sizes and frame rates, and the controls that matter for scanning (exposure, focus, gain, ...)
          with min/max/default/current values. Controls are named as --camera-control takes them.
          --all-controls   list every control, not only the scanning-related ones
        """

    public static func run(_ args: [String]) -> Int32 {
        var allControls = false
        for arg in args {
            switch arg {
            case "-h", "--help":
                print(usage)
                return ExitCode.success.rawValue
            case "--all-controls":
                allControls = true
            default:
                Logger.writeToStderr("scangate list-cameras: unknown option '\(Logger.escape(arg))' (allowed: --all-controls, --help)")
                return ExitCode.usage.rawValue
            }
        }
        let calls = SystemV4L2.calls()
        var found = 0
        for node in CameraNodes.videoNodes() {
            do {
                guard let text = try CameraListing.describe(node, links: CameraNodes.links(to: node), calls: calls,
                                                            allControls: allControls) else { continue }
                if found > 0 { print("") }
                print(text)
                found += 1
            } catch {
                Logger.writeToStderr("scangate list-cameras: \(error)")
            }
        }
        if found == 0 { Logger.writeToStderr("no cameras found") }
        return ExitCode.success.rawValue
    }
}

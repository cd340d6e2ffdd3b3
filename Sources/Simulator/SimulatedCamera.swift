#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform
import Settings

/// The simulated camera: renders a scenario's frames (`sim:FILE.scenario`) or one QR code that appears
/// and leaves forever (`sim:PAYLOAD`). Paced in real time at the scenario's fps unless `--fast`.
/// Frame numbers run from 0 and keep counting across loops; capture time = frame / fps.
public final class SimulatedCamera: FrameSource {
    public let name: String
    public let isLive: Bool
    public let scenario: Scenario
    private let settings: CaptureSettings
    private let renderer: ScenarioRenderer
    private var pacer: FramePacer
    private var sequence: UInt64 = 0

    /// - Parameter spec: the text after `sim:`: a scenario file (an existing path or a name ending in
    ///   `.scenario`) or a payload. The scenario's `size` and `fps` win over `settings.width/height/fps`.
    public init(spec: String, settings: CaptureSettings) throws(UsageError) {
        guard !spec.isEmpty else {
            throw UsageError("--camera sim: needs a payload (sim:HELLO) or a scenario file (sim:FILE.scenario)")
        }
        self.name = "sim:" + spec
        self.settings = settings
        self.isLive = !settings.fast
        if spec.hasSuffix(".scenario") || SimulatedCamera.isRegularFile(spec) {
            let bytes = try FileBytes.read(path: spec, limit: .scenario)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw UsageError("cannot read \(spec): the scenario is not UTF-8 text")
            }
            scenario = try ScenarioParser.parse(
                text: text, name: spec,
                defaults: .init(width: settings.width, height: settings.height, fps: settings.fps))
        } else {
            let payload = Array(spec.utf8)
            do {
                _ = try QREncoder.encode(payload, ecc: .M)
            } catch {
                throw UsageError("--camera sim:PAYLOAD: \(error.description)")
            }
            scenario = Scenario.appearing(payload: payload, width: settings.width, height: settings.height,
                                          fps: settings.fps)
        }
        do {
            renderer = try ScenarioRenderer(scenario: scenario)
        } catch {
            throw UsageError("\(name): \(error.description)")
        }
        pacer = FramePacer(fps: scenario.fps)
    }

    /// Frames of one pass through the scenario.
    public var frameCount: Int { scenario.frameCount }
    public var width: Int { scenario.width }
    public var height: Int { scenario.height }
    public var fps: Double { scenario.fps }

    public func open() throws {
        sequence = 0
        pacer.reset()
    }

    public func nextFrame(until stop: StopToken) throws -> Frame? {
        let count = UInt64(scenario.frameCount)
        let loops = scenario.loops || settings.loop
        if stop.isStopped || (!loops && sequence >= count) { return nil }
        let luma = renderer.render(frame: Int(sequence % count))
        if isLive { pacer.waitForNextFrame() }
        let frame = Frame(width: scenario.width, height: scenario.height, sequence: sequence,
                          captureTime: Frame.mediaTime(sequence: sequence, fps: scenario.fps),
                          dequeuedAt: .now(), luma: luma)
        sequence += 1
        return frame
    }

    public func close() {}

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}

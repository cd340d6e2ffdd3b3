import Core
import Platform
import Simulator

/// Frames for the benchmarks, rendered once into memory from scenarios, so that the measured loops do
/// only what the daemon does (no rendering).
public enum BenchFrames {
    public static func render(_ scenarioText: String, name: String) throws(UsageError) -> [Frame] {
        let scenario = try ScenarioParser.parse(text: scenarioText, name: name,
                                                defaults: .init(width: 640, height: 480, fps: 15))
        let renderer: ScenarioRenderer
        do { renderer = try ScenarioRenderer(scenario: scenario) } catch { throw UsageError("\(name): \(error)") }
        return (0..<scenario.frameCount).map { i in
            Frame(width: scenario.width, height: scenario.height, sequence: UInt64(i),
                  captureTime: Frame.mediaTime(sequence: UInt64(i), fps: scenario.fps), luma: renderer.render(frame: i))
        }
    }

    /// Codes appearing and leaving over a noisy scene: 300 frames, 640x480, four appearances. The last
    /// code leaves 2 s before the end, so replaying the frames in a loop gives four reads per pass.
    public static let traffic = """
        fps 15
        frames 300
        noise 3
        code qr "ACCESS-0001" frames 10-60 at 60,60 module 4
        code qr "ACCESS-0002" frames 90-140 at 320,180 module 3
        code qr "VISITOR-ABCDEFGHIJ-0003" frames 170-230 module 4 rotate 10
        code qr "ACCESS-0001" frames 240-269 at 200,100 module 5
        """

    /// A static scene with no code in view (sensor noise only).
    public static let idle = """
        fps 15
        frames 300
        noise 3
        """
}

/// Replays in-memory frames `repeats` times as a source, renumbering them so time moves on.
public final class MemoryFrameSource: FrameSource {
    public let name = "memory"
    public let isLive: Bool
    private let frames: [Frame]
    private let repeats: Int
    private let fps: Double
    private let paceMs: Double
    private var index = 0

    public init(frames: [Frame], repeats: Int = 1, live: Bool = false, fps: Double = 15, paceMs: Double = 0) {
        self.frames = frames
        self.repeats = repeats
        self.isLive = live
        self.fps = fps
        self.paceMs = paceMs
    }

    public func open() throws { index = 0 }

    public func nextFrame(until stop: StopToken) throws -> Frame? {
        guard !stop.isStopped, !frames.isEmpty, index < frames.count * repeats else { return nil }
        if paceMs > 0 { sleepThread(milliseconds: paceMs) }
        let f = frames[index % frames.count]
        let seq = UInt64(index)
        index += 1
        return Frame(width: f.width, height: f.height, sequence: seq, captureTime: Frame.mediaTime(sequence: seq, fps: fps),
                     dequeuedAt: .now(), luma: f.luma)
    }

    public func close() {}
}

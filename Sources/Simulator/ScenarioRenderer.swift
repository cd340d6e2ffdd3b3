import Images

/// Renders frame N of a scenario. Code patches are drawn once; the scene (background + the codes in view +
/// whole-frame blur and contrast) is recomposed only when the set of codes in view changes; noise is added
/// per frame from a seeded table. So a frame costs about one copy and one noise pass.
public final class ScenarioRenderer {
    public let scenario: Scenario
    private let patches: [CodePatch]
    private let placements: [(x: Int, y: Int)]
    private var cachedVisible: [Int]?
    private var cachedScene: [UInt8] = []
    private let frameNoise: NoiseField?
    private var codeNoise: [Int: NoiseField] = [:]

    /// Throws when a code cannot be drawn (its payload does not fit its symbology).
    public init(scenario: Scenario) throws(SymbolError) {
        self.scenario = scenario
        var patches: [CodePatch] = []
        var placements: [(x: Int, y: Int)] = []
        for code in scenario.codes {
            let patch = try CodePatch(code, background: scenario.background)
            let x = code.position?.x ?? (scenario.width - patch.image.width) / 2
            let y = code.position?.y ?? (scenario.height - patch.image.height) / 2
            patches.append(patch)
            placements.append((max(0, x), max(0, y)))
        }
        self.patches = patches
        self.placements = placements
        frameNoise = scenario.noise > 0 ? NoiseField(sigma: scenario.noise, seed: scenario.seed) : nil
        for (i, code) in scenario.codes.enumerated() where code.noise > 0 {
            codeNoise[i] = NoiseField(sigma: code.noise, seed: scenario.seed &+ UInt64(i + 1) &* 7919)
        }
    }

    /// Indices of the codes in view in frame `index` (0..<frameCount).
    public func visibleCodes(inFrame index: Int) -> [Int] {
        scenario.codes.indices.filter { scenario.codes[$0].frames.contains(index) }
    }

    /// The box (x, y, w, h) a code occupies in every frame where it is in view.
    public func box(ofCode index: Int) -> (x: Int, y: Int, w: Int, h: Int) {
        let p = placements[index], image = patches[index].image
        return (p.x, p.y, min(image.width, scenario.width - p.x), min(image.height, scenario.height - p.y))
    }

    /// The luma of frame `index` of one pass (0..<frameCount), width*height bytes.
    public func render(frame index: Int) -> [UInt8] {
        let visible = visibleCodes(inFrame: index)
        if visible != cachedVisible {
            cachedScene = composeScene(visible)
            cachedVisible = visible
        }
        var pixels = cachedScene
        let key = DeterministicRandom.mix(scenario.seed, UInt64(index))
        for i in visible {
            if let noise = codeNoise[i] {
                let b = box(ofCode: i)
                noise.apply(to: &pixels, stride: scenario.width, x: b.x, y: b.y, w: b.w, h: b.h, frameKey: key &+ UInt64(i))
            }
        }
        frameNoise?.apply(to: &pixels, stride: scenario.width, x: 0, y: 0, w: scenario.width, h: scenario.height, frameKey: key)
        return pixels
    }

    private func composeScene(_ visible: [Int]) -> [UInt8] {
        let w = scenario.width, h = scenario.height
        var pixels = [UInt8](repeating: scenario.background, count: w * h)
        for i in visible {
            let image = patches[i].image
            let b = box(ofCode: i)
            image.pixels.withUnsafeBufferPointer { src in
                pixels.withUnsafeMutableBufferPointer { dst in
                    for row in 0..<b.h {
                        let from = src.baseAddress! + row * image.width
                        let to = dst.baseAddress! + (b.y + row) * w + b.x
                        to.update(from: from, count: b.w)
                    }
                }
            }
        }
        if scenario.blur > 0 {
            pixels = ImageEffects.boxBlur(LumaImage(width: w, height: h, pixels: pixels), radius: scenario.blur).pixels
        }
        ImageEffects.contrast(&pixels, factor: scenario.contrast)
        return pixels
    }
}

import Images

/// Renders frame N of a scenario. Code patches are drawn once; the scene (background + the codes in view +
/// whole-frame blur and contrast) is recomposed only when the set of codes in view changes; noise is added
/// per frame from a seeded table. So a frame costs about one copy and one noise pass.
public final class ScenarioRenderer {
    public let scenario: Scenario
    private let patches: [CodePatch]
    private let placements: [(x: Int, y: Int)]
    private var cachedVisible: [Int]?
    private var cachedEvent: Scenario.SceneEventKind??
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

    /// Indices of the codes in view in frame `index` (0..<frameCount); none while the camera is covered or
    /// turned away.
    public func visibleCodes(inFrame index: Int) -> [Int] {
        guard scenario.event(inFrame: index) == nil else { return [] }
        return scenario.codes.indices.filter { scenario.codes[$0].frames.contains(index) }
    }

    /// The box (x, y, w, h) a code occupies in every frame where it is in view.
    public func box(ofCode index: Int) -> (x: Int, y: Int, w: Int, h: Int) {
        let p = placements[index], image = patches[index].image
        return (p.x, p.y, min(image.width, scenario.width - p.x), min(image.height, scenario.height - p.y))
    }

    /// The luma of frame `index` of one pass (0..<frameCount), width*height bytes.
    public func render(frame index: Int) -> [UInt8] {
        let event = scenario.event(inFrame: index)
        let visible = visibleCodes(inFrame: index)
        if visible != cachedVisible || cachedEvent != .some(event) {
            cachedScene = event == nil ? composeScene(visible) : eventView(event ?? .cover)
            cachedVisible = visible
            cachedEvent = .some(event)
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

    /// The covered lens (a flat, nearly black view) or the scene the camera was turned to (the backdrop
    /// of another seed, or a flat one turned into a left-to-right ramp).
    private func eventView(_ kind: Scenario.SceneEventKind) -> [UInt8] {
        let w = scenario.width, h = scenario.height
        switch kind {
        case .cover:
            return [UInt8](repeating: 8, count: w * h)
        case .turn:
            if let seed = scenario.backdrop { return Self.backdrop(width: w, height: h, background: scenario.background, seed: seed ^ 0x5DEECE66D) }
            var pixels = [UInt8](repeating: 0, count: w * h)
            for y in 0..<h { for x in 0..<w { pixels[y * w + x] = UInt8(40 + 180 * x / max(1, w - 1)) } }
            return pixels
        }
    }

    /// Blocks of 24 x 24 pixels, each `background` +- 48 grey levels, drawn from `seed`.
    static func backdrop(width w: Int, height h: Int, background: UInt8, seed: UInt64) -> [UInt8] {
        var pixels = [UInt8](repeating: background, count: w * h)
        let block = 24
        let across = (w + block - 1) / block
        for y in 0..<h {
            for x in 0..<w {
                let cell = UInt64((y / block) * across + x / block)
                let offset = Int(DeterministicRandom.mix(seed, cell) % 97) - 48
                pixels[y * w + x] = UInt8(clamping: Int(background) + offset)
            }
        }
        return pixels
    }

    private func composeScene(_ visible: [Int]) -> [UInt8] {
        let w = scenario.width, h = scenario.height
        var pixels = scenario.backdrop.map { Self.backdrop(width: w, height: h, background: scenario.background, seed: $0) }
            ?? [UInt8](repeating: scenario.background, count: w * h)
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

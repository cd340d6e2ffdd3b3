import Core

/// What the simulated camera shows: a frame size and rate, a number of frames, and codes that are in view
/// during frame ranges, each with its own placement and effects. Parsed from the text format in
/// docs/scenario-format.md (`ScenarioParser`) or built for `sim:PAYLOAD`.
public struct Scenario: Equatable, Sendable {
    public var width: Int
    public var height: Int
    public var fps: Double
    /// Frames in one pass (frame numbers 0..<frameCount).
    public var frameCount: Int
    /// Start again after the last frame (also with `--loop`).
    public var loops: Bool = false
    /// Gray level of the scene behind the codes.
    public var background: UInt8 = 160
    /// Whole-frame effects, applied after the codes are placed.
    public var noise: Double = 0
    public var blur: Int = 0
    public var contrast: Double = 1
    /// Seeds the noise, so a scenario renders the same pixels every time.
    public var seed: UInt64 = 1
    public var codes: [Code] = []
    /// `backdrop SEED`: a textured scene (blocks of grey around `background`, drawn from the seed) in
    /// place of the flat grey, so the view looks like a room to camera-tamper; nil: flat.
    public var backdrop: UInt64?
    /// `cover frames A-B` and `turn frames A-B`: the camera covered (a dark, flat view) or turned away
    /// (another backdrop, no codes) for those frames.
    public var events: [SceneEvent] = []

    public enum SceneEventKind: String, Equatable, Sendable {
        case cover, turn
    }

    public struct SceneEvent: Equatable, Sendable {
        public var kind: SceneEventKind
        public var frames: ClosedRange<Int>
        public init(kind: SceneEventKind, frames: ClosedRange<Int>) {
            self.kind = kind
            self.frames = frames
        }
    }

    /// What the camera sees in frame `index`: the scene, or an event's view.
    public func event(inFrame index: Int) -> SceneEventKind? {
        events.last { $0.frames.contains(index) }?.kind
    }

    public init(width: Int, height: Int, fps: Double, frameCount: Int) {
        self.width = width
        self.height = height
        self.fps = fps
        self.frameCount = frameCount
    }

    public struct Code: Equatable, Sendable {
        public var symbology: Symbology
        public var payload: [UInt8]
        /// In view for these frame numbers (inclusive).
        public var frames: ClosedRange<Int>
        /// Top-left corner of the code's box (quiet zone included, after rotation); nil: centred.
        public var position: (x: Int, y: Int)?
        /// Pixels per module.
        public var moduleSize: Int
        public var ecc: QREncoder.ErrorCorrection = .M
        /// Linear codes: bar height in pixels (nil: 40 modules).
        public var barHeight: Int?
        /// Quiet zone in modules (nil: the symbology's standard one).
        public var quietZone: Int?
        /// Degrees, counter-clockwise.
        public var rotation: Double = 0
        /// Per-code effects, inside the code's box.
        public var noise: Double = 0
        public var blur: Int = 0
        public var contrast: Double = 1
        /// Light modules on a dark box (a phone in dark mode).
        public var inverted = false
        /// QR only: numeric/alphanumeric/Kanji segments instead of one 8-bit segment.
        public var segmented = false
        /// The scenario file's line, for messages.
        public var line: Int = 0

        public init(symbology: Symbology, payload: [UInt8], frames: ClosedRange<Int>, moduleSize: Int) {
            self.symbology = symbology
            self.payload = payload
            self.frames = frames
            self.moduleSize = moduleSize
        }

        public static func == (a: Code, b: Code) -> Bool {
            a.symbology == b.symbology && a.payload == b.payload && a.frames == b.frames
                && a.position?.x == b.position?.x && a.position?.y == b.position?.y && a.moduleSize == b.moduleSize
                && a.ecc == b.ecc && a.barHeight == b.barHeight && a.quietZone == b.quietZone
                && a.rotation == b.rotation && a.noise == b.noise && a.blur == b.blur && a.contrast == b.contrast
                && a.inverted == b.inverted && a.segmented == b.segmented && a.line == b.line
        }
    }

    /// `sim:PAYLOAD`: one QR code in the middle, in view for about 2 s, then out of view for about 2 s
    /// (longer than the default 1500 ms hold-off, so every appearance is reported), forever.
    public static func appearing(payload: [UInt8], width: Int, height: Int, fps: Double) -> Scenario {
        let shown = max(1, Int((2 * fps).rounded()))
        // Out of view for more than 1.5 s: (hidden + 1) frame intervals between the last and next sighting.
        let hidden = max(Int((2 * fps).rounded()), Int((1.5 * fps).rounded(.up)) + 1, 1)
        var scenario = Scenario(width: width, height: height, fps: fps, frameCount: shown + hidden)
        scenario.loops = true
        var code = Code(symbology: .qr, payload: payload, frames: 0...(shown - 1), moduleSize: 4)
        // Fit the code in about 60% of the shorter side.
        if let modules = try? QREncoder.encode(payload, ecc: .M).width {
            let fit = Int(Double(min(width, height)) * 0.6) / (modules + 8)
            code.moduleSize = max(1, min(6, fit))
        }
        scenario.codes = [code]
        return scenario
    }
}

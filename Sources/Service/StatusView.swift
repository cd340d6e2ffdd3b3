import Core
import Platform

/// Figures of one frame for aiming a camera, computed on request (the status socket's thread), never
/// per frame:
/// - brightness: the mean luma and a 16-bin histogram (bin i counts levels 16i...16i+15), over every pixel;
/// - sharpness: the variance of the 4-neighbour Laplacian (4·p − left − right − up − down), taken at every
///   other pixel of every other row (the neighbours at full resolution). It grows as the image comes into
///   focus; its scale depends on the scene, so compare it while turning the focus on one scene.
public struct FrameFigures: Sendable, Equatable {
    public static let bins = 16
    public var meanLuma: Double
    public var histogram: [UInt64]
    public var sharpness: Double

    public init(meanLuma: Double, histogram: [UInt64], sharpness: Double) {
        self.meanLuma = meanLuma
        self.histogram = histogram
        self.sharpness = sharpness
    }

    public static let sharpnessMeasure = "variance of the 4-neighbour Laplacian at every other pixel of every other row"

    public static func measure(luma: [UInt8], width: Int, height: Int) -> FrameFigures {
        var histogram = [UInt64](repeating: 0, count: bins)
        var sum: UInt64 = 0
        var lapSum = 0.0, lapSquares = 0.0, lapCount = 0
        luma.withUnsafeBufferPointer { p in
            guard width > 0, height > 0, p.count >= width * height else { return }
            for i in 0..<(width * height) {
                let v = p[i]
                sum &+= UInt64(v)
                histogram[Int(v >> 4)] &+= 1
            }
            var y = 1
            while y < height - 1 {
                let row = y * width
                var x = 1
                while x < width - 1 {
                    let c = Int(p[row + x]) * 4
                    let l = c - Int(p[row + x - 1]) - Int(p[row + x + 1]) - Int(p[row + x - width]) - Int(p[row + x + width])
                    let d = Double(l)
                    lapSum += d
                    lapSquares += d * d
                    lapCount += 1
                    x += 2
                }
                y += 2
            }
        }
        let pixels = width * height
        let mean = pixels > 0 ? Double(sum) / Double(pixels) : 0
        var variance = 0.0
        if lapCount > 0 {
            let m = lapSum / Double(lapCount)
            variance = max(0, lapSquares / Double(lapCount) - m * m)
        }
        return FrameFigures(meanLuma: mean, histogram: histogram, sharpness: variance)
    }
}

extension StatusReport {
    /// What the camera and the decoder see now: the newest frame's figures, the codes of the newest
    /// decoded frame, the capture rate and the change gate. `view` in `status --json`; nil before the
    /// first frame.
    public struct View: Sendable, Equatable {
        public struct Code: Sendable, Equatable {
            public var symbology: String
            public var corners: [Point]
            /// As the outputs showed it (a possible pass: its fingerprint); nil when not reported in view.
            public var payload: String?
            public init(symbology: String, corners: [Point], payload: String?) {
                self.symbology = symbology
                self.corners = corners
                self.payload = payload
            }
        }

        /// The change gate: it compares the whole frame with the last decoded one.
        public struct Gate: Sendable, Equatable {
            public var region: Rect
            public var threshold: Int
            public var rescanFrames: Int
            public init(region: Rect, threshold: Int, rescanFrames: Int) {
                self.region = region
                self.threshold = threshold
                self.rescanFrames = rescanFrames
            }
        }

        public var frame: UInt64
        public var width: Int
        public var height: Int
        public var framesPerSecond: Double?
        public var figures: FrameFigures
        /// The frame the codes were found in (the newest decoded one; nil before the first).
        public var decodedFrame: UInt64?
        public var codes: [Code]
        public var gate: Gate?

        public init(frame: UInt64, width: Int, height: Int, framesPerSecond: Double?, figures: FrameFigures,
                    decodedFrame: UInt64?, codes: [Code], gate: Gate?) {
            self.frame = frame
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.figures = figures
            self.decodedFrame = decodedFrame
            self.codes = codes
            self.gate = gate
        }

        public var json: String {
            JSONText.object([
                ("frame", String(frame)),
                ("width", String(width)),
                ("height", String(height)),
                ("fps", framesPerSecond.map { JSONText.number($0, decimals: 1) } ?? "null"),
                ("mean_luma", JSONText.number(figures.meanLuma, decimals: 2)),
                ("histogram", "[" + figures.histogram.map(String.init).joined(separator: ",") + "]"),
                ("sharpness", JSONText.number(figures.sharpness, decimals: 1)),
                ("sharpness_measure", JSONText.string(FrameFigures.sharpnessMeasure)),
                ("decoded_frame", decodedFrame.map { String($0) } ?? "null"),
                ("codes", "[" + codes.map { c in
                    JSONText.object([
                        ("symbology", JSONText.string(c.symbology)),
                        ("corners", "[" + c.corners.map { "[\($0.x),\($0.y)]" }.joined(separator: ",") + "]"),
                        ("payload", c.payload.map(JSONText.string) ?? "null"),
                    ])
                }.joined(separator: ",") + "]"),
                ("change_gate", gate.map { g in
                    JSONText.object([
                        ("region", "[\(g.region.x),\(g.region.y),\(g.region.w),\(g.region.h)]"),
                        ("threshold", String(g.threshold)),
                        ("rescan_frames", String(g.rescanFrames)),
                    ])
                } ?? "null"),
            ])
        }

        init(_ r: StatusJSONReader) throws(UsageError) {
            frame = try r.uint("frame")
            width = Int(clamping: try r.uint("width"))
            height = Int(clamping: try r.uint("height"))
            framesPerSecond = r.value["fps"] == nil || r.value["fps"] == .null ? nil : try r.double("fps")
            let histogram = try r.array("histogram").map { v throws(UsageError) -> UInt64 in
                guard let n = v.numberValue?.int64, n >= 0 else { throw UsageError("the daemon's status: view.histogram holds a non-count") }
                return UInt64(n)
            }
            guard histogram.count == FrameFigures.bins else { throw UsageError("the daemon's status: view.histogram has not \(FrameFigures.bins) bins") }
            figures = FrameFigures(meanLuma: try r.double("mean_luma"), histogram: histogram, sharpness: try r.double("sharpness"))
            decodedFrame = r.value["decoded_frame"] == nil || r.value["decoded_frame"] == .null ? nil : try r.uint("decoded_frame")
            codes = try r.array("codes").map { v throws(UsageError) -> Code in
                let c = StatusJSONReader(v)
                let corners = try c.array("corners").map { p throws(UsageError) -> Point in
                    guard let xy = p.arrayValue, xy.count == 2, let x = xy[0].numberValue?.int64, let y = xy[1].numberValue?.int64,
                          abs(x) < 1 << 20, abs(y) < 1 << 20 else {
                        throw UsageError("the daemon's status: a code's corner is not [x,y]")
                    }
                    return Point(x: Int(x), y: Int(y))
                }
                return Code(symbology: try c.string("symbology"), corners: corners, payload: try c.optionalString("payload"))
            }
            if let g = try r.optionalObject("change_gate") {
                let region = try g.array("region").compactMap { $0.numberValue?.int64 }
                guard region.count == 4, region.allSatisfy({ abs($0) < 1 << 20 }) else {
                    throw UsageError("the daemon's status: view.change_gate.region is not [x,y,w,h]")
                }
                gate = Gate(region: Rect(x: Int(region[0]), y: Int(region[1]), w: Int(region[2]), h: Int(region[3])),
                            threshold: Int(clamping: try g.int("threshold")), rescanFrames: Int(clamping: try g.int("rescan_frames")))
            }
        }
    }
}

/// The answer to a `snapshot` request: one JSON line (`{"view": …}`, the view of the frame) and then the
/// frame's luma, width × height bytes, row by row. At most `maxSide` × `maxSide`.
public struct StatusSnapshot: Sendable {
    public static let maxSide = 4096
    public var view: StatusReport.View
    public var luma: [UInt8]

    public init(view: StatusReport.View, luma: [UInt8]) {
        self.view = view
        self.luma = luma
    }

    /// The bytes the socket sends.
    public var encoded: [UInt8] {
        var out = Array((JSONText.object([("view", view.json)]) + "\n").utf8)
        out.reserveCapacity(out.count + luma.count)
        out += luma
        return out
    }

    /// Reads an answer back: the header line, then exactly width × height bytes. An `{"error": …}` line is
    /// the daemon's refusal, thrown as it is.
    public init(answer: [UInt8]) throws(UsageError) {
        guard let newline = answer.firstIndex(of: 0x0A) else { throw UsageError("the daemon's snapshot has no header line") }
        let header: JSONValue
        do {
            header = try JSONValue.parse(Array(answer[..<newline]), maxBytes: 1 << 20, maxDepth: 8)
        } catch {
            throw UsageError("the daemon's snapshot header is not valid JSON: \(error)")
        }
        if let message = header["error"]?.stringValue { throw UsageError("the daemon refused the snapshot: \(message)") }
        let reader = StatusJSONReader(header)
        view = try StatusReport.View(reader.object("view"))
        guard (1...Self.maxSide).contains(view.width), (1...Self.maxSide).contains(view.height) else {
            throw UsageError("the daemon's snapshot is \(view.width)x\(view.height), not within 1x1...\(Self.maxSide)x\(Self.maxSide)")
        }
        let body = answer[(newline + 1)...]
        guard body.count == view.width * view.height else {
            throw UsageError("the daemon's snapshot has \(body.count) bytes of luma, not \(view.width)x\(view.height)")
        }
        luma = Array(body)
    }
}

import Core

/// Parses the line-based scenario format documented in docs/scenario-format.md. Every error is a
/// UsageError naming `FILE:LINE`, what was wrong, and what is allowed.
public enum ScenarioParser {
    public struct Defaults: Sendable {
        public var width: Int, height: Int, fps: Double
        public init(width: Int, height: Int, fps: Double) { self.width = width; self.height = height; self.fps = fps }
    }

    /// At most this many `code` lines (each is drawn once and kept while the scenario plays).
    public static let maximumCodes = 256
    /// The codes' drawn pixels added up (rotation included), at most: 32 MB of patches.
    public static let maximumCodePixels = 1 << 25

    static let keywords = "size, fps, frames, loop, background, backdrop, noise, blur, contrast, seed, code, cover, turn"
    static let codeOptions = "frames, at, module, ecc, height, quiet, rotate, noise, blur, contrast, invert, segments"

    public static func parse(text: String, name: String, defaults: Defaults) throws(UsageError) -> Scenario {
        var scenario = Scenario(width: defaults.width, height: defaults.height, fps: defaults.fps, frameCount: 0)
        var frameCount: Int?
        var frameCountLine = 0
        var openEnded: [Int] = [] // indices of codes with `frames A-`
        var eventLines: [Int] = [] // the line of each `cover` / `turn`
        var lineNumber = 0
        // Lines split on scalars: as Characters, "\r\n" is one grapheme that is not "\n", so a CRLF file
        // would be one long line (the tokenizer takes the "\r" as a blank).
        for rawLine in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let at = "\(name):\(lineNumber)"
            var tokens: [Token]
            do {
                tokens = try tokenize(String(String.UnicodeScalarView(rawLine)))
            } catch {
                throw UsageError("\(at): \(error.description)")
            }
            guard let keyword = tokens.first else { continue }
            tokens.removeFirst()
            var args = Arguments(tokens: tokens, at: at)
            switch keyword.text {
            case "size":
                let text = try args.word("size", "WIDTHxHEIGHT, e.g. 640x480")
                let parts = text.split(separator: "x")
                guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
                      (16...4096).contains(w), (16...4096).contains(h) else {
                    throw UsageError("\(at): size '\(text)' is not WIDTHxHEIGHT with each 16-4096 (e.g. 640x480)")
                }
                scenario.width = w
                scenario.height = h
            case "fps":
                scenario.fps = try args.double("fps", in: 0.5...240)
            case "frames":
                frameCount = try args.int("frames", in: 1...100_000_000)
                frameCountLine = lineNumber
            case "loop":
                scenario.loops = true
            case "background":
                scenario.background = UInt8(try args.int("background", in: 0...255))
            case "noise":
                scenario.noise = try args.double("noise", in: 0...100)
            case "blur":
                scenario.blur = try args.int("blur", in: 0...20)
            case "contrast":
                scenario.contrast = try args.double("contrast", in: 0.05...1)
            case "seed":
                scenario.seed = UInt64(try args.int("seed", in: 0...Int(Int32.max)))
            case "backdrop":
                scenario.backdrop = UInt64(try args.int("backdrop", in: 0...Int(Int32.max)))
            case "cover", "turn":
                let kind = Scenario.SceneEventKind(rawValue: keyword.text) ?? .cover
                guard try args.word(keyword.text, "frames A-B") == "frames" else {
                    throw UsageError("\(at): \(keyword.text) takes `frames A-B` (the frames the camera is \(kind == .cover ? "covered" : "turned away"))")
                }
                let (range, open) = try frameRange(try args.word("frames", "A-B (inclusive), A- (until the end) or A"), at: at)
                guard !open else { throw UsageError("\(at): \(keyword.text) frames A- is not allowed here; give A-B") }
                scenario.events.append(.init(kind: kind, frames: range))
                eventLines.append(lineNumber)
            case "code":
                guard scenario.codes.count < maximumCodes else {
                    throw UsageError("\(at): too many codes; a scenario holds at most \(maximumCodes) `code` lines")
                }
                let (code, open) = try parseCode(&args, line: lineNumber)
                if open { openEnded.append(scenario.codes.count) }
                scenario.codes.append(code)
            default:
                throw UsageError("\(at): unknown keyword '\(keyword.text)' (allowed: \(keywords))")
            }
            try args.finish(keyword.text)
        }
        guard !scenario.codes.isEmpty || frameCount != nil else {
            throw UsageError("\(name): the scenario has no `code` lines and no `frames` count")
        }
        let lastFrame = (scenario.codes.map(\.frames.upperBound) + scenario.events.map(\.frames.upperBound)).max() ?? 0
        if let count = frameCount {
            for (event, line) in zip(scenario.events, eventLines) where event.frames.upperBound >= count {
                throw UsageError("\(name):\(line): \(event.kind.rawValue) frames ...-\(event.frames.upperBound) goes past the last frame \(count - 1)")
            }
        }
        if let count = frameCount {
            for code in scenario.codes where code.frames.lowerBound >= count {
                throw UsageError("\(name):\(code.line): frames \(code.frames.lowerBound)- starts after the last frame (frames \(count) means 0-\(count - 1))")
            }
            for index in openEnded { scenario.codes[index].frames = scenario.codes[index].frames.lowerBound...(count - 1) }
            for code in scenario.codes where code.frames.upperBound >= count {
                throw UsageError("\(name):\(code.line): frames ...-\(code.frames.upperBound) goes past the last frame \(count - 1) (set by line \(frameCountLine))")
            }
            scenario.frameCount = count
        } else {
            if let index = openEnded.first {
                throw UsageError("\(name):\(scenario.codes[index].line): `frames A-` (until the end) needs a `frames N` line giving the total")
            }
            scenario.frameCount = lastFrame + 1
        }
        // Each code must fit in the frame, and all of them in the pixel budget: checked from their sizes,
        // before anything is drawn (ScenarioRenderer draws each once and keeps it).
        var pixels = 0
        for code in scenario.codes {
            let size: (width: Int, height: Int)
            do {
                size = try CodePatch.size(of: code)
            } catch {
                throw UsageError("\(name):\(code.line): \(error.description)")
            }
            guard size.width <= scenario.width, size.height <= scenario.height else {
                throw UsageError("\(name):\(code.line): the code is \(size.width)x\(size.height) pixels and does not fit in the \(scenario.width)x\(scenario.height) frame (use a smaller module)")
            }
            if let p = code.position, p.x + size.width > scenario.width || p.y + size.height > scenario.height {
                throw UsageError("\(name):\(code.line): the code at \(p.x),\(p.y) is \(size.width)x\(size.height) pixels and goes past the \(scenario.width)x\(scenario.height) frame")
            }
            pixels += size.width * size.height
            guard pixels <= maximumCodePixels else {
                throw UsageError("\(name):\(code.line): the codes up to this line take \(pixels) pixels; a scenario's codes are limited to \(maximumCodePixels) pixels in all (two 4096x4096 frames)")
            }
        }
        return scenario
    }

    private static func parseCode(_ args: inout Arguments, line: Int) throws(UsageError) -> (Scenario.Code, Bool) {
        let at = args.at
        let symbologyName = try args.word("code", "a symbology (\(SymbolEncoder.supportedNames)) and a quoted payload")
        guard let symbology = Symbology(name: symbologyName), SymbolEncoder.supported.contains(symbology) else {
            throw UsageError("\(at): unknown symbology '\(symbologyName)' (allowed: \(SymbolEncoder.supportedNames))")
        }
        guard let payloadToken = args.next(), payloadToken.quoted else {
            throw UsageError("\(at): code \(symbologyName) needs a payload in double quotes, e.g. \"HELLO\"")
        }
        let payload: [UInt8]
        do {
            payload = try PayloadEscapes.decode(payloadToken.text)
        } catch {
            throw UsageError("\(at): payload: \(error.description)")
        }
        var code = Scenario.Code(symbology: symbology, payload: payload, frames: 0...0,
                                 moduleSize: symbology.is2D ? 4 : 3)
        code.line = line
        var sawFrames = false
        var openEnded = false
        while let option = args.next() {
            guard !option.quoted else {
                throw UsageError("\(at): unexpected \"\(option.text)\" (one payload per code line; options: \(codeOptions))")
            }
            switch option.text {
            case "frames":
                let text = try args.word("frames", "A-B (inclusive), A- (until the end) or A")
                (code.frames, openEnded) = try frameRange(text, at: at)
                sawFrames = true
            case "at":
                let text = try args.word("at", "X,Y (top-left corner in pixels) or center")
                if text == "center" || text == "centre" {
                    code.position = nil
                } else {
                    let parts = text.split(separator: ",")
                    guard parts.count == 2, let x = Int(parts[0]), let y = Int(parts[1]), x >= 0, y >= 0 else {
                        throw UsageError("\(at): at '\(text)' is not X,Y with X, Y >= 0, or center")
                    }
                    code.position = (x, y)
                }
            case "module": code.moduleSize = try args.int("module", in: 1...64)
            case "ecc":
                let text = try args.word("ecc", "L, M, Q or H")
                guard let ecc = QREncoder.ErrorCorrection(name: text) else {
                    throw UsageError("\(at): ecc '\(text)' is not one of L, M, Q, H")
                }
                code.ecc = ecc
            case "height": code.barHeight = try args.int("height", in: 1...4096)
            case "quiet": code.quietZone = try args.int("quiet", in: 0...64)
            case "rotate": code.rotation = try args.double("rotate", in: -360...360)
            case "noise": code.noise = try args.double("noise", in: 0...100)
            case "blur": code.blur = try args.int("blur", in: 0...20)
            case "contrast": code.contrast = try args.double("contrast", in: 0.05...1)
            case "invert": code.inverted = true
            case "segments":
                guard symbology == .qr else { throw UsageError("\(at): segments is for qr codes only") }
                code.segmented = true
            default:
                throw UsageError("\(at): unknown code option '\(option.text)' (allowed: \(codeOptions))")
            }
        }
        guard sawFrames else { throw UsageError("\(at): code \(symbologyName) needs `frames A-B` (when it is in view)") }
        return (code, openEnded)
    }

    private static func frameRange(_ text: String, at: String) throws(UsageError) -> (ClosedRange<Int>, Bool) {
        let bad = UsageError("\(at): frames '\(text)' is not A-B (inclusive, A <= B), A- or A, with frame numbers from 0")
        if let dash = text.firstIndex(of: "-") {
            guard let a = Int(text[..<dash]), a >= 0 else { throw bad }
            let rest = text[text.index(after: dash)...]
            if rest.isEmpty { return (a...a, true) }
            guard let b = Int(rest), b >= a else { throw bad }
            return (a...b, false)
        }
        guard let a = Int(text), a >= 0 else { throw bad }
        return (a...a, false)
    }

    // MARK: tokens

    struct Token { var text: String; var quoted: Bool }

    struct TokenizeError: Error { let description: String }

    /// Splits on blanks; "quoted text" is one token (its escapes are decoded later); `#` starts a comment.
    static func tokenize(_ line: String) throws(TokenizeError) -> [Token] {
        var tokens: [Token] = []
        var current = ""
        var inWord = false
        var iterator = Array(line.unicodeScalars).makeIterator()
        func flush() {
            if inWord { tokens.append(Token(text: current, quoted: false)) }
            current = ""
            inWord = false
        }
        while let c = iterator.next() {
            switch c {
            case " ", "\t", "\r":
                flush()
            case "#":
                if inWord { current.unicodeScalars.append(c); continue }
                return tokens
            case "\"":
                flush()
                var text = ""
                var closed = false
                while let q = iterator.next() {
                    if q == "\\" {
                        text.unicodeScalars.append(q)
                        guard let escaped = iterator.next() else { break }
                        text.unicodeScalars.append(escaped)
                    } else if q == "\"" {
                        closed = true
                        break
                    } else {
                        text.unicodeScalars.append(q)
                    }
                }
                guard closed else { throw TokenizeError(description: "a quoted payload has no closing \"") }
                tokens.append(Token(text: text, quoted: true))
            default:
                current.unicodeScalars.append(c)
                inWord = true
            }
        }
        flush()
        return tokens
    }

    struct Arguments {
        var tokens: [Token]
        let at: String
        var index = 0

        init(tokens: [Token], at: String) { self.tokens = tokens; self.at = at }

        mutating func next() -> Token? {
            guard index < tokens.count else { return nil }
            defer { index += 1 }
            return tokens[index]
        }

        mutating func word(_ keyword: String, _ allowed: String) throws(UsageError) -> String {
            guard let t = next(), !t.quoted else { throw UsageError("\(at): \(keyword) needs \(allowed)") }
            return t.text
        }

        mutating func int(_ keyword: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
            let text = try word(keyword, "a whole number in \(range.lowerBound)-\(range.upperBound)")
            guard let v = Int(text), range.contains(v) else {
                throw UsageError("\(at): \(keyword) '\(text)' is not a whole number in \(range.lowerBound)-\(range.upperBound)")
            }
            return v
        }

        mutating func double(_ keyword: String, in range: ClosedRange<Double>) throws(UsageError) -> Double {
            let text = try word(keyword, "a number in \(fmt(range.lowerBound))-\(fmt(range.upperBound))")
            guard let v = Double(text), v.isFinite, range.contains(v) else {
                throw UsageError("\(at): \(keyword) '\(text)' is not a number in \(fmt(range.lowerBound))-\(fmt(range.upperBound))")
            }
            return v
        }

        func finish(_ keyword: String) throws(UsageError) {
            guard index >= tokens.count else {
                throw UsageError("\(at): unexpected '\(tokens[index].text)' after \(keyword)")
            }
        }

        private func fmt(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Images
import Platform
import Decoding
import Settings

/// Accuracy of `ImageDecoder` (with decode-image's settings) on the real-photo corpus
/// (../shared/corpus), scored like its eval.py: an image counts as read (strict) when its expected
/// payload equals a run of consecutive output lines; lenient also accepts the representation
/// differences eval.py documents (UPC digit form, missing EAN add-on, whitespace, charset); a misread
/// printed something, but not the expected payload.
public struct AccuracyReport: Sendable, CustomStringConvertible {
    public struct Group: Sendable, Equatable {
        public var name: String
        public var cases = 0
        public var strict = 0
        public var lenient = 0
        public var misreads = 0
        /// Decode time only (image files are read before the clock starts).
        public var decodeMilliseconds = 0.0
        public var msPerImage: Double { cases == 0 ? 0 : decodeMilliseconds / Double(cases) }
    }

    /// "QR", "1D" (and "other" when the corpus has more), in that order.
    public var groups: [Group]
    /// Which pass read each strict hit: pass name → count.
    public var passes: [String: Int]
    /// Images that could not be read or had no expectation.
    public var skipped: [String]
    /// Per image: "folder/name verdict" for every image that was not a strict hit.
    public var failures: [String]

    public func group(_ name: String) -> Group? { groups.first { $0.name == name } }

    public var description: String {
        var lines = ["| group | cases | strict | lenient | misreads | ms/image |", "|---|---|---|---|---|---|"]
        for g in groups {
            lines.append("| \(g.name) | \(g.cases) | \(g.strict) | \(g.lenient) | \(g.misreads) | \(format(g.msPerImage)) |")
        }
        lines.append("passes: " + passes.sorted { $0.value > $1.value }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        if !skipped.isEmpty { lines.append("skipped: " + skipped.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    private func format(_ v: Double) -> String {
        let tenths = Int((v * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// The settings `scangate decode-image` uses: every symbology, inverted codes, GTIN-13 for UPC,
/// QR text as UTF-8, Code 39 full ASCII, no idle gating.
public func imageDecoderDefaults() -> DecoderSettings {
    var settings = DecoderSettings()
    settings.symbologies = Set(Symbology.allCases)
    settings.testInverted = true
    settings.upcaAsEAN13 = true
    settings.upceAsGTIN13 = true
    settings.qrTextAsUTF8 = true
    settings.code39FullASCII = true
    settings.eanAddOns = true
    settings.idleRescanFrames = 0
    return settings
}

/// Runs `ImageDecoder` with decode-image's defaults over `corpus` (the directory holding `samples/`,
/// or `samples/` itself). An empty report (no groups) when the corpus is missing.
public func measureAccuracy(corpus: String, settings: DecoderSettings = imageDecoderDefaults()) -> AccuracyReport {
    var report = AccuracyReport(groups: [], passes: [:], skipped: [], failures: [])
    let samples = isDirectory(corpus + "/samples") ? corpus + "/samples" : corpus
    guard let folders = try? directoryEntries(samples), let decoder = try? ImageDecoder(settings: settings) else {
        return report
    }
    var groups: [String: AccuracyReport.Group] = [:]
    let imageExtensions = [".png", ".jpg", ".jpeg", ".pgm"]
    for folder in folders where isDirectory(samples + "/" + folder) {
        guard let files = try? directoryEntries(samples + "/" + folder) else { continue }
        for file in files where imageExtensions.contains(where: { file.lowercased().hasSuffix($0) }) {
            let stem = String(file[..<(file.lastIndex(of: ".") ?? file.endIndex)])
            let path = samples + "/" + folder + "/" + file
            guard let expected = readExpectation(samples + "/" + folder + "/" + stem) else {
                report.skipped.append(folder + "/" + file)
                continue
            }
            guard let image = try? ImageFile.read(path: path) else {
                report.skipped.append(folder + "/" + file)
                continue
            }
            let start = MonotonicInstant.now()
            let symbols = decoder.decode(width: image.width, height: image.height, luma: image.pixels)
            let elapsed = MonotonicInstant.now().milliseconds(since: start)
            let name = AccuracyScoring.category(folder: folder, stem: stem)
            var g = groups[name] ?? AccuracyReport.Group(name: name)
            g.cases += 1
            g.decodeMilliseconds += elapsed
            switch AccuracyScoring.judge(expected: expected, outputs: symbols.map(\.data)) {
            case .strict:
                g.strict += 1
                g.lenient += 1
                report.passes[decoder.lastPass ?? "?", default: 0] += 1
            case .lenient(let why):
                g.lenient += 1
                report.failures.append("\(folder)/\(file) lenient:\(why)")
            case .misread:
                g.misreads += 1
                report.failures.append("\(folder)/\(file) misread")
            case .none:
                report.failures.append("\(folder)/\(file) none")
            }
            groups[name] = g
        }
    }
    report.groups = ["QR", "1D", "other"].compactMap { groups[$0] }
    return report
}

/// The expected payload: `stem.bin` (raw bytes) or `stem.txt`, minus one trailing newline.
private func readExpectation(_ stemPath: String) -> [UInt8]? {
    for ext in [".bin", ".txt"] {
        if let bytes = try? FileBytes.read(path: stemPath + ext, limit: .corpusAnswer) {
            return bytes.last == 0x0A ? Array(bytes.dropLast()) : bytes
        }
    }
    return nil
}

/// eval.py's matching rules.
enum AccuracyScoring {
    enum Verdict: Equatable { case strict, lenient(String), misread, none }

    static func category(folder: String, stem: String) -> String {
        let base = folder.split(separator: ".").first.map(String.init) ?? folder
        if base == "zbar-examples" { return stem.hasPrefix("qr") ? "QR" : "1D" }
        if base.hasPrefix("qrcode") { return "QR" }
        if ["ean", "upc", "code128", "code39", "itf"].contains(where: { base.hasPrefix($0) }) { return "1D" }
        return "other"
    }

    static func judge(expected: [UInt8], outputs: [[UInt8]]) -> Verdict {
        // decode-image prints each payload on its own line; eval.py splits stdout on "\n".
        var lines: [[UInt8]] = []
        for data in outputs {
            lines += data.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        }
        for i in lines.indices {
            var joined = lines[i]
            if joined == expected { return .strict }
            for j in (i + 1)..<lines.count {
                joined += [0x0A] + lines[j]
                if joined == expected { return .strict }
            }
        }
        guard !outputs.isEmpty else { return .none }
        let text = String(decoding: expected, as: UTF8.self)
        let digitsOnly = !expected.isEmpty && expected.allSatisfy { $0 >= 48 && $0 <= 57 }
        for out in outputs {
            let o = String(decoding: out, as: UTF8.self)
            if digitsOnly, out.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
                let g = gtin13(out)
                if g == expected { return .lenient("upc-form") }
                if (expected.count == 15 || expected.count == 18), Array(expected.prefix(13)) == g {
                    return .lenient("addon-missing")
                }
            }
            let trim: (String) -> String = { s in
                String(s.unicodeScalars.drop(while: { $0.properties.isWhitespace })
                        .reversed().drop(while: { $0.properties.isWhitespace }).reversed().map(Character.init))
            }
            if trim(o) == trim(text) { return .lenient("ws") }
            if QRText.latin1ToUTF8(out) == expected || QRText.latin1ToUTF8(expected) == out { return .lenient("charset") }
        }
        return .misread
    }

    /// The 13-digit GTIN a 12-digit UPC-A or 8-digit UPC-E stands for.
    static func gtin13(_ digits: [UInt8]) -> [UInt8] {
        if digits.count == 12 { return [UInt8(ascii: "0")] + digits }
        if digits.count == 8, digits[0] == UInt8(ascii: "0") || digits[0] == UInt8(ascii: "1"),
           let upca = SymbolNormaliser.expandUPCE(digits) {
            return [UInt8(ascii: "0")] + upca
        }
        return digits
    }
}

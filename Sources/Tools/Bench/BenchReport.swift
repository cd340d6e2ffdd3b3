/// What `scangate bench` measured, printed as a table or JSON.
public struct BenchReport: Sendable {
    public struct Row: Sendable {
        public var name: String
        public var measured: String
        public var target: String
        public var pass: Bool?
        public init(name: String, measured: String, target: String, pass: Bool?) {
            self.name = name
            self.measured = measured
            self.target = target
            self.pass = pass
        }
    }

    public var rows: [Row] = []
    /// Per-stage mean milliseconds (from the throughput run of the whole daemon).
    public var stages: [(String, Double)] = []
    /// Frame dequeue → serial frame arrived at the far end.
    public var latency: Percentiles?
    /// Frame dequeue → green LED line set.
    public var latencyGPIO: Percentiles?
    public var latencyExcess: Percentiles?
    public var figures: [(String, Double)] = []
    /// The decoders scored on the live-path frames (`--live-frames DIR`).
    public var liveFrames: LiveFrameReport?

    public init() {}

    public var allPassed: Bool { rows.allSatisfy { $0.pass != false } }

    public func table() -> String {
        var out: [String] = []
        func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : s + String(repeating: " ", count: w - s.count) }
        // Each column as wide as its longest cell, plus two spaces.
        let nameWidth = max(44, (rows.map(\.name.count).max() ?? 0) + 2)
        let measuredWidth = max(26, (rows.map(\.measured.count).max() ?? 0) + 2)
        let targetWidth = max(22, (rows.map(\.target.count).max() ?? 0) + 2)
        out.append(pad("benchmark", nameWidth) + pad("measured", measuredWidth) + pad("target", targetWidth) + "ok")
        out.append(String(repeating: "-", count: nameWidth + measuredWidth + targetWidth + 3))
        for r in rows {
            out.append(pad(r.name, nameWidth) + pad(r.measured, measuredWidth) + pad(r.target, targetWidth)
                       + (r.pass.map { $0 ? "yes" : "NO" } ?? "-"))
        }
        if !stages.isEmpty {
            out.append("")
            out.append("per-stage mean time (whole daemon, --fast replay of 640x480 frames):")
            for (name, ms) in stages { out.append("  " + pad(name, 12) + fmt(ms, 3) + " ms") }
        }
        if let l = latency, let e = latencyExcess, l.count > 0 {
            out.append("")
            out.append("latency, frame dequeue -> serial frame at the far end of the line (\(l.count) events): p50 \(fmt(l.at(50), 2)) ms, p99 \(fmt(l.at(99), 2)) ms")
            if let g = latencyGPIO, g.count > 0 {
                out.append("latency, frame dequeue -> green LED line set (\(g.count) events): p50 \(fmt(g.at(50), 2)) ms, p99 \(fmt(g.at(99), 2)) ms")
            }
            out.append("  beyond that frame's decode time (the later of the two): p50 \(fmt(e.at(50), 3)) ms, p99 \(fmt(e.at(99), 3)) ms")
            out.append(histogram(l))
        }
        if !figures.isEmpty {
            out.append("")
            for (name, v) in figures { out.append("  " + pad(name, 48) + fmt(v, 3)) }
        }
        if let liveFrames {
            out.append("")
            out.append(liveFrames.table())
        }
        return out.joined(separator: "\n")
    }

    func histogram(_ p: Percentiles) -> String {
        guard let lo = p.sorted.first, let hi = p.sorted.last, hi > lo else { return "" }
        let buckets = 10
        let width = (hi - lo) / Double(buckets)
        var counts = [Int](repeating: 0, count: buckets)
        for v in p.sorted { counts[min(buckets - 1, Int((v - lo) / width))] += 1 }
        let maxCount = counts.max() ?? 1
        var lines: [String] = []
        for (i, c) in counts.enumerated() {
            let from = lo + Double(i) * width
            let label = fmt(from, 2) + "-" + fmt(from + width, 2) + " ms"
            let bar = String(repeating: "#", count: max(c > 0 ? 1 : 0, c * 40 / maxCount))
            lines.append("  " + label + String(repeating: " ", count: max(1, 20 - label.count)) + bar + " \(c)")
        }
        return lines.joined(separator: "\n")
    }

    public func json() -> String {
        func str(_ s: String) -> String {
            "\"" + s.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"") + "\""
        }
        func num(_ d: Double) -> String { d.isFinite ? fmt(d, 4) : "null" }
        var parts: [String] = []
        parts.append("\"rows\":[" + rows.map { r in
            "{\"name\":\(str(r.name)),\"measured\":\(str(r.measured)),\"target\":\(str(r.target)),\"pass\":\(r.pass.map { $0 ? "true" : "false" } ?? "null")}"
        }.joined(separator: ",") + "]")
        parts.append("\"stages_ms\":{" + stages.map { "\(str($0.0)):\(num($0.1))" }.joined(separator: ",") + "}")
        if let l = latency, let e = latencyExcess {
            let g = latencyGPIO ?? Percentiles([])
            parts.append("\"latency_ms\":{\"count\":\(l.count),\"serial_p50\":\(num(l.at(50))),\"serial_p99\":\(num(l.at(99))),"
                         + "\"gpio_p50\":\(num(g.at(50))),\"gpio_p99\":\(num(g.at(99))),"
                         + "\"excess_p50\":\(num(e.at(50))),\"excess_p99\":\(num(e.at(99)))}")
        }
        parts.append("\"figures\":{" + figures.map { "\(str($0.0)):\(num($0.1))" }.joined(separator: ",") + "}")
        parts.append("\"live_frames\":" + (liveFrames?.json() ?? "null"))
        parts.append("\"all_passed\":\(allPassed)")
        return "{" + parts.joined(separator: ",") + "}"
    }
}

/// A number with exactly `decimals` decimals ("n/a" when not finite).
public func fmt(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "n/a" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let r = (v * scale).rounded() / scale
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let have = s.distance(from: dot, to: s.endIndex) - 1
        if have < decimals { s += String(repeating: "0", count: decimals - have) }
    } else if decimals > 0 {
        s += "." + String(repeating: "0", count: decimals)
    }
    return s
}

extension String {
    func replacingAll(_ a: String, _ b: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: a) {
            out += rest[..<r.lowerBound] + b
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}

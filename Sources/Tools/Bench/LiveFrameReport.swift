import Core

/// What the live-path row measured: per decoder, reads and misreads per category and thread-CPU per
/// frame, printed as a table (categories down, decoders across) or JSON.
public struct LiveFrameReport: Sendable {
    /// One decoder's column.
    public struct Column: Sendable {
        public var decoder: String
        /// False for the reference scorer, timed in a process of its own (Python).
        public var inProcess = true
        public var frames: [String: Int] = [:]
        public var reads: [String: Int] = [:]
        public var misreads: [String: Int] = [:]
        /// The frames where it found a code that is not there, in order.
        public var misreadFiles: [String] = []
        /// The frames showing a code it did not read, in order.
        public var missedFiles: [String] = []
        var emptyMs = 0.0, emptyCount = 0, codeMs = 0.0, codeCount = 0

        public init(decoder: String, categories: [String]) {
            self.decoder = decoder
            for c in categories { frames[c] = 0; reads[c] = 0; misreads[c] = 0 }
        }

        /// One frame scored: a read when a code's bytes equal the payload; every other code is a misread.
        public mutating func add(file: String, category: String, expected: [UInt8]?, found: [[UInt8]], cpuMs: Double?) {
            let read = expected.map { found.contains($0) } ?? false
            add(file: file, category: category, showsCode: expected != nil, read: read,
                misreads: found.filter { $0 != expected }.count, cpuMs: cpuMs)
        }

        /// One frame scored elsewhere (the reference scorer).
        public mutating func add(file: String, category: String, showsCode: Bool, read: Bool, misreads count: Int,
                                 cpuMs: Double?) {
            frames[category, default: 0] += 1
            if read { reads[category, default: 0] += 1 }
            misreads[category, default: 0] += count
            if count > 0 { misreadFiles.append(file) }
            if showsCode && !read { missedFiles.append(file) }
            guard let cpuMs, cpuMs.isFinite else { return }
            if showsCode { codeMs += cpuMs; codeCount += 1 } else { emptyMs += cpuMs; emptyCount += 1 }
        }

        /// Mean thread-CPU milliseconds per frame: on empty scenes, on frames with a code, on all.
        public var cpuEmpty: Double { emptyCount > 0 ? emptyMs / Double(emptyCount) : .nan }
        public var cpuCode: Double { codeCount > 0 ? codeMs / Double(codeCount) : .nan }
        public var cpuAll: Double { emptyCount + codeCount > 0 ? (emptyMs + codeMs) / Double(emptyCount + codeCount) : .nan }
        public var totalReads: Int { reads.values.reduce(0, +) }
        public var totalMisreads: Int { misreads.values.reduce(0, +) }
    }

    public var directory: String
    public var key: String
    public var frames: Int
    public var repeats: Int
    public var categories: [LiveFrameSet.Category]
    /// zbar first: the denominator of every CPU ratio.
    public var columns: [Column]
    /// How the reference column was measured, when there is one.
    public var referenceNote: String? = nil

    /// Frames that show a code (all but the empty scenes).
    public var framesWithCode: Int {
        guard let first = columns.first else { return 0 }
        return categories.filter { $0.format != nil }.map { first.frames[$0.name] ?? 0 }.reduce(0, +)
    }

    func ratio(_ value: Double, _ base: Double) -> Double { base > 0 ? value / base : .nan }

    public func table() -> String {
        guard let zbar = columns.first else { return "live-path frames: no decoder" }
        func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : s + String(repeating: " ", count: w - s.count) }
        let groups: [(String, (Column) -> Double)] = [("empty scenes", \.cpuEmpty), ("frames with a code", \.cpuCode),
                                                      ("all frames", \.cpuAll)]
        // Rows: a label and one cell per column.
        var rows: [(String, [String])] = []
        for c in categories {
            if c.format == nil {
                rows.append(("\(c.name) (misreads)", columns.map { "\($0.misreads[c.name] ?? 0)" }))
            } else {
                rows.append((c.name, columns.map { col in
                    let misread = col.misreads[c.name] ?? 0
                    return "\(col.reads[c.name] ?? 0)/\(col.frames[c.name] ?? 0)" + (misread > 0 ? " (\(misread) misread)" : "")
                }))
            }
        }
        let rule = rows.count
        rows.append(("reads", columns.map { "\($0.totalReads)/\(framesWithCode)" }))
        rows.append(("misreads, all frames", columns.map { "\($0.totalMisreads)" }))
        for (name, value) in groups { rows.append(("CPU ms/frame, \(name)", columns.map { fmt(value($0), 2) })) }
        for (name, value) in groups {
            rows.append(("CPU vs \(zbar.decoder), \(name)", columns.map { fmt(ratio(value($0), value(zbar)), 2) }))
        }
        let headers = columns.map { $0.decoder + ($0.inProcess ? "" : " *") }
        let first = max(10, rows.map(\.0.count).max() ?? 0) + 2
        let width = max(10, (headers + rows.flatMap(\.1)).map(\.count).max() ?? 0) + 2
        let line = String(repeating: "-", count: first + width * columns.count)
        var out: [String] = []
        out.append("live-path frames: \(frames) frames of \(categories.count) categories (\(directory)), "
                   + "each decoder \(repeats)x per frame, interleaved; thread CPU, best of \(repeats)")
        out.append(pad("category", first) + headers.map { pad($0, width) }.joined())
        out.append(line)
        for (i, row) in rows.enumerated() {
            if i == rule { out.append(line) }
            out.append(pad(row.0, first) + row.1.map { pad($0, width) }.joined())
        }
        for col in columns where !col.misreadFiles.isEmpty {
            out.append("misread by \(col.decoder): " + col.misreadFiles.joined(separator: ", "))
        }
        if let referenceNote { out.append("* \(referenceNote)") }
        return out.joined(separator: "\n")
    }

    public func json() -> String {
        func str(_ s: String) -> String { JSONText.string(s) }
        func num(_ d: Double) -> String { d.isFinite ? fmt(d, 4) : "null" }
        func counts(_ m: [String: Int]) -> String {
            "{" + categories.map { "\(str($0.name)):\(m[$0.name] ?? 0)" }.joined(separator: ",") + "}"
        }
        let zbar = columns.first
        let cats = categories.map { c in
            "{\"name\":\(str(c.name)),\"format\":\(c.format.map(str) ?? "null"),\"frames\":\(zbar?.frames[c.name] ?? 0),"
                + "\"description\":\(str(c.description))}"
        }
        let decoders = columns.map { col in
            let cpu = "{\"empty\":\(num(col.cpuEmpty)),\"code\":\(num(col.cpuCode)),\"all\":\(num(col.cpuAll))}"
            let vs = zbar.map { z in
                "{\"empty\":\(num(ratio(col.cpuEmpty, z.cpuEmpty))),\"code\":\(num(ratio(col.cpuCode, z.cpuCode))),"
                    + "\"all\":\(num(ratio(col.cpuAll, z.cpuAll)))}"
            } ?? "null"
            return "{\"name\":\(str(col.decoder)),\"in_process\":\(col.inProcess),\"reads\":\(counts(col.reads)),"
                + "\"misreads\":\(counts(col.misreads)),\"misread_files\":[\(col.misreadFiles.map(str).joined(separator: ","))],\"missed_files\":[\(col.missedFiles.map(str).joined(separator: ","))],\"reads_total\":\(col.totalReads),\"misreads_total\":\(col.totalMisreads),"
                + "\"cpu_ms_per_frame\":\(cpu),\"cpu_vs_zbar\":\(vs)}"
        }
        return "{\"directory\":\(str(directory)),\"generator_key\":\(str(key)),\"frames\":\(frames),"
            + "\"frames_with_code\":\(framesWithCode),\"repeats\":\(repeats),\"categories\":[\(cats.joined(separator: ","))],"
            + "\"decoders\":[\(decoders.joined(separator: ","))],\"reference_note\":\(referenceNote.map(str) ?? "null")}"
    }
}

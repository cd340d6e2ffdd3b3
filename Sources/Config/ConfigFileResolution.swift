import Core
import Settings

/// Where `scangate run` gets its settings: defaults, then the config file, then command-line flags.
public enum Configuration {
    /// Defaults → `configPath` (if any) → `flagAssignments` (from `CommandLineParser`), in that order,
    /// so a flag overrides the file. Repeatable options (`camera-control`) accumulate: the file's first,
    /// then the flags'. Any error is a `UsageError` naming the file, line and key, or the flag.
    public static func resolve(configPath: String?, flagAssignments: [(OptionSpec, String)],
                               table: [OptionSpec] = OptionTable.all) throws(UsageError) -> RunSettings {
        var settings = RunSettings()
        if let path = configPath {
            let entries = try ConfigFile.load(path: path, table: table)
            try ConfigFile.apply(entries, from: path, to: &settings)
        }
        try CommandLineParser.apply(flagAssignments, to: &settings)
        return settings
    }

    /// A check's message in the words of where the settings came from. The checks name options as
    /// flags (`--door-relay needs a GPIO chip: set --door-relay-chip`); when every setting came from the
    /// file, they become its keys, and the message starts with the file and the line of the first key it
    /// names: `scangate.conf:7: door-relay needs a GPIO chip: set door-relay-chip or gpio-chip ...`.
    public static func explain(_ message: String, configPath: String?, flagAssignments: [(OptionSpec, String)],
                               table: [OptionSpec] = OptionTable.all) -> String {
        guard let path = configPath, flagAssignments.isEmpty, !message.hasPrefix(path) else { return message }
        // Each `--name` of a known option, longest names first (so --door-relay-chip is not read as
        // --door-relay), where the next character does not continue a name.
        var found: [(range: Range<String.Index>, name: String)] = []
        for option in table.sorted(by: { $0.name.count > $1.name.count }) {
            var from = message.startIndex
            while let range = Self.find("--" + option.name, in: message, from: from) {
                from = range.upperBound
                if range.upperBound < message.endIndex, let c = message[range.upperBound].unicodeScalars.first,
                   c.properties.isAlphabetic || c == "-" || ("0"..."9").contains(c) { continue }
                if found.contains(where: { $0.range.overlaps(range) }) { continue }
                found.append((range, option.name))
            }
        }
        found.sort { $0.range.lowerBound < $1.range.lowerBound }
        var text = message
        for hit in found.reversed() { text.replaceSubrange(hit.range, with: hit.name) }
        // Keys the message names as keys already (wiegand-d1 is missing), for the line.
        func continuesName(_ c: Character?) -> Bool {
            guard let scalar = c?.unicodeScalars.first else { return false }
            return scalar.properties.isAlphabetic || scalar == "-" || ("0"..."9").contains(scalar)
        }
        if found.isEmpty {
            for option in table {
                guard let range = Self.find(option.name, in: text, from: text.startIndex) else { continue }
                let before = range.lowerBound > text.startIndex ? text[text.index(before: range.lowerBound)] : nil
                let after = range.upperBound < text.endIndex ? text[range.upperBound] : nil
                if !continuesName(before) && !continuesName(after) { found.append((range, option.name)) }
            }
            found.sort { $0.range.lowerBound < $1.range.lowerBound }
        }
        // The line of the first key named that the file sets (a key it lacks has no line).
        let entries = (try? ConfigFile.load(path: path, table: table)) ?? []
        for hit in found {
            if let entry = entries.first(where: { $0.option.name == hit.name }) { return "\(path):\(entry.line): \(text)" }
        }
        return "\(path): \(text)"
    }

    /// The first occurrence of `needle` in `text` at or after `start`, compared byte for byte.
    static func find(_ needle: String, in text: String, from start: String.Index) -> Range<String.Index>? {
        let bytes = Array(needle.utf8)
        guard !bytes.isEmpty else { return nil }
        var i = start
        while i < text.endIndex {
            var j = i, k = 0
            let utf8 = text.utf8
            while k < bytes.count, j < utf8.endIndex, utf8[j] == bytes[k] {
                j = utf8.index(after: j)
                k += 1
            }
            if k == bytes.count, let lower = i.samePosition(in: text), let upper = j.samePosition(in: text) { return lower..<upper }
            i = text.index(after: i)
        }
        return nil
    }
}

/// One tone of a beep pattern: a frequency (0 Hz is a pause) held for a duration.
public struct Tone: Equatable, Hashable, Sendable {
    public var hertz: Int
    public var milliseconds: Int

    public init(hertz: Int, milliseconds: Int) {
        self.hertz = hertz
        self.milliseconds = milliseconds
    }

    public var isSilence: Bool { hertz == 0 }
}

/// A beep: tones played one after another, written "HZ:MS" comma-separated (`2000:100`,
/// `1800:80,0:40,1800:80`). Each audible tone gets its own short attack and release ramp.
public struct BeepPattern: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let tones: [Tone]

    /// Limits a pattern must keep (so a typo cannot make a kiosk beep for minutes).
    public static let hertzRange = 20...20_000
    public static let millisecondsRange = 1...5_000
    public static let maxTones = 32
    public static let maxTotalMilliseconds = 10_000

    /// Good read: one 2000 Hz tone for 100 ms (a classic scanner "beep").
    public static let defaultGood = BeepPattern(validated: [Tone(hertz: 2000, milliseconds: 100)])
    /// Rejected/error: two short, lower tones with a gap (700 Hz, 90 ms on, 60 ms off, 90 ms on).
    public static let defaultError = BeepPattern(validated: [
        Tone(hertz: 700, milliseconds: 90), Tone(hertz: 0, milliseconds: 60), Tone(hertz: 700, milliseconds: 90),
    ])

    /// The read cue of `feedback = controller`: one short, higher tone (2500 Hz, 40 ms).
    public static let defaultCue = BeepPattern(validated: [Tone(hertz: 2500, milliseconds: 40)])

    /// What a pattern may look like, for error messages and help.
    public static let syntaxHelp = "tones HZ:MS separated by commas (HZ 0 for a pause or 20-20000, MS 1-5000, "
        + "at most 32 tones and 10000 ms in all), e.g. 2000:100 or 1800:80,0:40,1800:80"

    private init(validated tones: [Tone]) { self.tones = tones }

    /// Builds a pattern from tones, checking every limit.
    public init(tones: [Tone]) throws(BeepPatternError) {
        guard !tones.isEmpty else { throw BeepPatternError("has no tones") }
        guard tones.count <= Self.maxTones else {
            throw BeepPatternError("has \(tones.count) tones; at most \(Self.maxTones) are allowed")
        }
        for tone in tones {
            guard tone.hertz == 0 || Self.hertzRange.contains(tone.hertz) else {
                throw BeepPatternError("frequency \(tone.hertz) Hz is not 0 (pause) or 20-20000")
            }
            guard Self.millisecondsRange.contains(tone.milliseconds) else {
                throw BeepPatternError("duration \(tone.milliseconds) ms is not 1-5000")
            }
        }
        let total = tones.reduce(0) { $0 + $1.milliseconds }
        guard total <= Self.maxTotalMilliseconds else {
            throw BeepPatternError("lasts \(total) ms; at most \(Self.maxTotalMilliseconds) ms are allowed")
        }
        guard tones.contains(where: { !$0.isSilence }) else {
            throw BeepPatternError("has only pauses (0 Hz); give at least one audible tone")
        }
        self.tones = tones
    }

    /// Parses "HZ:MS[,HZ:MS...]" (spaces around items allowed).
    public init(parsing text: String) throws(BeepPatternError) {
        var tones: [Tone] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2,
                  let hz = Int(Self.trim(parts[0])), let ms = Int(Self.trim(parts[1])) else {
                throw BeepPatternError("'\(text)' is not a beep pattern: \(Self.syntaxHelp)")
            }
            tones.append(Tone(hertz: hz, milliseconds: ms))
        }
        do {
            try self.init(tones: tones)
        } catch {
            throw BeepPatternError("'\(text)' \(error.message): \(Self.syntaxHelp)")
        }
    }

    public var totalMilliseconds: Int { tones.reduce(0) { $0 + $1.milliseconds } }

    /// "2000:100,0:40,2000:100": the text that parses back to this pattern.
    public var description: String { tones.map { "\($0.hertz):\($0.milliseconds)" }.joined(separator: ",") }

    private static func trim(_ s: Substring) -> Substring {
        var s = s
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}

/// A pattern that breaks the syntax or a limit; the message says what is allowed.
public struct BeepPatternError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

import Core
import Platform
import Settings

/// Report-once rules, on the frames' capture timestamps:
/// - a code (symbology + payload bytes) is reported once, after it has been read in
///   `confirmations(for:)` decoded frames in a row;
/// - it is not reported again while it stays in view (gaps shorter than the hold-off are still "in view");
/// - it is reported again only after it has been out of view for longer than the hold-off;
/// - every code in view is tracked on its own, so two codes never loop A-B-A, and another code is read at once.
public struct Debouncer: Sendable {
    public let settings: DebounceSettings

    struct Track: Sendable {
        var lastSeen: MonotonicInstant
        /// Reads in consecutive decoded frames (for confirmation).
        var reads: Int
        var lastFrame: UInt64
        var reported: Bool
    }
    private var tracks: [CodeKey: Track] = [:]
    /// Decoded frames so far; "in a row" means in consecutive decoded frames.
    private var frameIndex: UInt64 = 0

    public init(settings: DebounceSettings) { self.settings = settings }

    /// Codes being tracked (in view, or within the hold-off after leaving).
    public var trackedCount: Int { tracks.count }

    /// Feeds one decoded frame; returns the symbols to report now, in the order given.
    public mutating func process(time: MonotonicInstant, symbols: [DecodedSymbol]) -> [DecodedSymbol] {
        forgetCodesGone(before: time)
        frameIndex += 1
        var report: [DecodedSymbol] = []
        var seenThisFrame = Set<CodeKey>()
        for symbol in symbols {
            let key = symbol.key
            guard seenThisFrame.insert(key).inserted else { continue }
            var track = tracks[key] ?? Track(lastSeen: time, reads: 0, lastFrame: 0, reported: false)
            track.reads = track.lastFrame + 1 == frameIndex ? track.reads + 1 : 1
            track.lastFrame = frameIndex
            track.lastSeen = time
            if !track.reported && track.reads >= settings.confirmations(for: symbol.symbology) {
                track.reported = true
                report.append(symbol)
            }
            tracks[key] = track
        }
        return report
    }

    /// A code out of view for longer than the hold-off is forgotten: its next read is a new appearance.
    private mutating func forgetCodesGone(before time: MonotonicInstant) {
        let holdOff = settings.holdOffMs
        guard !tracks.isEmpty else { return }
        tracks = tracks.filter { time.milliseconds(since: $0.value.lastSeen) <= holdOff }
    }
}

import Core
import Platform

/// What the camera and the decoder see now, for `scangate status --snapshot` and the figures in
/// `status --json`. The daemon owns one for its whole run; each pipeline run feeds it:
/// - the capture thread keeps a reference to the newest frame (its luma is a copy-on-write array the
///   source made for that frame: keeping it copies nothing) and the times of the last frames (the rate);
/// - the decode queue keeps the codes found in the newest decoded frame: their corners and symbology, and
///   the payload as the outputs saw it (a possible pass's fingerprint, never its token). A code found but
///   not reported (the debouncer held it) shows the payload its last report showed while it stays in
///   view, else none.
/// Readers (the status socket's thread) take a copy of the references under the lock; figures are
/// computed by them, on request, never per frame.
public final class LiveView: Sendable {
    public struct Code: Sendable, Equatable {
        public var symbology: Symbology
        /// As the decoder located it, in frame pixels (zbar: the box's corners).
        public var corners: [Point]
        /// What the outputs showed for it; nil when it was not reported while in view.
        public var payload: String?
        public init(symbology: Symbology, corners: [Point], payload: String?) {
            self.symbology = symbology
            self.corners = corners
            self.payload = payload
        }
    }

    /// The codes of the newest decoded frame.
    public struct Decoded: Sendable, Equatable {
        public var frame: UInt64
        public var codes: [Code]
    }

    /// The change gate in force (decoder idle-rescan-frames > 0): it watches the whole frame.
    public struct Gate: Sendable, Equatable {
        public var threshold: Int
        public var rescanFrames: Int
        public init(threshold: Int, rescanFrames: Int) {
            self.threshold = threshold
            self.rescanFrames = rescanFrames
        }
    }

    /// One look at the view: the newest frame, the newest decoded frame's codes, the capture rate.
    public struct Look: Sendable {
        public var frame: Frame?
        public var decoded: Decoded?
        /// Frames per second over the last `rateWindow` frames (nil before two frames).
        public var framesPerSecond: Double?
        public var gate: Gate?
    }

    /// Frames the rate is measured over.
    public static let rateWindow = 32

    private struct State {
        var frame: Frame?
        var decoded: Decoded?
        var gate: Gate?
        /// dequeuedAt of the last `rateWindow` frames, a ring.
        var times = [UInt64](repeating: 0, count: LiveView.rateWindow)
        var next = 0
        var count = 0
    }
    private let state = PosixMutex(State())

    public init() {}

    /// The capture thread: `frame` is the newest. The frame it replaces is released outside the lock.
    public func captured(_ frame: Frame) {
        let previous: Frame? = state.withLock { s in
            let old = s.frame
            s.frame = frame
            s.times[s.next] = frame.dequeuedAt.nanoseconds
            s.next = (s.next + 1) % LiveView.rateWindow
            s.count = min(s.count + 1, LiveView.rateWindow)
            return old
        }
        _ = previous
    }

    /// The decode queue: what it found in frame `frame`.
    public func decoded(frame: UInt64, codes: [Code]) {
        let previous = state.withLock { s in
            let old = s.decoded
            s.decoded = Decoded(frame: frame, codes: codes)
            return old
        }
        _ = previous
    }

    /// The change gate of the decoder in force (nil: gating is off).
    public func setGate(_ gate: Gate?) { state.withLock { $0.gate = gate } }

    public func look() -> Look {
        state.withLock { s in
            var rate: Double?
            if s.count >= 2 {
                let newest = s.times[(s.next + LiveView.rateWindow - 1) % LiveView.rateWindow]
                let oldest = s.times[(s.next + LiveView.rateWindow - s.count) % LiveView.rateWindow]
                if newest > oldest { rate = Double(s.count - 1) / (Double(newest - oldest) / 1e9) }
            }
            return Look(frame: s.frame, decoded: s.decoded, framesPerSecond: rate, gate: s.gate)
        }
    }
}

/// The decode queue's memory of what the outputs showed for the codes in view: the shown payload of each
/// code reported, kept while the code stays in view (at most `limit` codes), so a debounced frame can show
/// it too. Confined to the decode queue.
struct ShownPayloads {
    static let limit = 16
    private var shown: [(key: CodeKey, text: String)] = []

    /// The codes of one decoded frame for the view; `reported` pairs a symbol reported in this frame with
    /// the event the outputs got.
    mutating func codes(for symbols: [DecodedSymbol], reported: [(symbol: DecodedSymbol, event: ReadEvent)]) -> [LiveView.Code] {
        var next: [(key: CodeKey, text: String)] = []
        let codes = symbols.map { symbol -> LiveView.Code in
            let key = symbol.key
            var text: String?
            if let event = reported.first(where: { $0.symbol.key == key })?.event {
                text = ShownPayloads.describe(event.symbol.data)
            } else {
                text = shown.first { $0.key == key }?.text
            }
            if let text, next.count < ShownPayloads.limit, !next.contains(where: { $0.key == key }) { next.append((key, text)) }
            return LiveView.Code(symbology: symbol.symbology, corners: symbol.corners, payload: text)
        }
        shown = next
        return codes
    }

    /// The payload as text: UTF-8 as it is (at most 200 characters), anything else as hex.
    static func describe(_ data: [UInt8]) -> String {
        if let text = String(validating: data, as: UTF8.self) {
            return text.count > 200 ? String(text.prefix(200)) + "..." : text
        }
        return "0x" + Hex.string(data.prefix(100)) + (data.count > 100 ? "..." : "")
    }
}

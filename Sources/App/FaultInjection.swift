import Core
import Decoding
import Dispatch
import Platform

/// Faults the test suites inject into the real binary, to prove what a user cannot provoke on purpose:
/// a thread stuck in a blocking call at shutdown. Read once from the environment (`SCANGATE_FAULT`); a
/// service never sets it.
///
/// - `hang-decode`: the decode queue blocks for ever in the decoder after its first read has been
///   reported, as a driver or library call that never returns would.
/// - `clock-unsynchronised`: `credential verify` sees a clock that is not synchronised, as a kiosk
///   before NTP has answered does.
/// - `park-at:STEP` or `park-at:STEP:N`: the N-th time (default 1) the process reaches STEP it writes
///   `scangate: fault: parked at STEP (#N)` to stderr and blocks there for ever, so a test kills it at
///   that step, not at a moment picked by a clock (Platform/FaultParking.swift). Steps: the one-time
///   store's `replay-record-written` (before fdatasync), `replay-record-synced` (on disk, not yet
///   reported), `replay-compaction-written` (temp file synced, not renamed), `replay-compaction-renamed`;
///   the anti-passback store's `passback-record-written` and `passback-record-synced`.
enum FaultInjection {
    static let variable = "SCANGATE_FAULT"

    /// The clock check `credential verify` uses: the kernel's, or an unsynchronised one under the fault.
    static func clockCheck() -> ClockSyncCheck {
        guard let fault = getenv(variable).map({ String(cString: $0) }), fault == "clock-unsynchronised" else {
            return ClockSync.kernel()
        }
        return ClockSync.fixed(false, "\(variable)=clock-unsynchronised, a test fault")
    }

    static func wrap(_ decoder: Decoder, logger: Logger) -> Decoder {
        guard let fault = getenv(variable).map({ String(cString: $0) }), !fault.isEmpty else { return decoder }
        switch fault {
        case "hang-decode":
            logger.warning("\(variable)=hang-decode: the decoder will hang after the first code (a test fault)")
            return HangingDecoder(inner: decoder)
        case _ where FaultParking.parse(fault) != nil:
            logger.warning("\(variable)=\(fault): the process will park at that step (a test fault)")
            return decoder
        default:
            logger.warning("\(variable)=\(fault) is not a known fault (hang-decode, clock-unsynchronised, park-at:STEP[:N] with STEP one of \(FaultParking.steps.joined(separator: ", "))); ignored")
            return decoder
        }
    }
}

/// Decodes normally until a frame has given a code, then blocks for ever on the next frame.
private final class HangingDecoder: Decoder, @unchecked Sendable {
    private let inner: Decoder
    private var found = false
    private let never = DispatchSemaphore(value: 0)

    init(inner: Decoder) { self.inner = inner }

    func decode(_ frame: Frame) -> [DecodedSymbol] {
        if found { never.wait() }
        let symbols = inner.decode(frame)
        if !symbols.isEmpty { found = true }
        return symbols
    }
}

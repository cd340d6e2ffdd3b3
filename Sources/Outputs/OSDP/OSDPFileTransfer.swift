import Core
import Platform

/// osdp_FTSTAT's FtStatusDetail (SIA OSDP 2.2, the file transfer status codes; libosdp's
/// OSDP_FILE_TX_STATUS_* in src/osdp_file.c carry the same numbers).
public enum OSDPFileStatusDetail: Int16, Sendable, CustomStringConvertible {
    /// OK to proceed: send the next fragment.
    case proceed = 0
    /// The file arrived whole and its contents were processed.
    case processed = 1
    /// The file arrived; the PD is rebooting to finish (ScanGate never sends it).
    case rebooting = 2
    /// The file arrived; the PD is finishing, keep polling (ScanGate never sends it).
    case finishing = 3
    /// The transfer is aborted (a fragment out of order, no transfer to continue, no config file).
    case abort = -1
    /// The file type or contents are not recognized.
    case unrecognized = -2
    /// The file data is unacceptable or malformed.
    case unacceptable = -3

    public var description: String {
        switch self {
        case .proceed: return "0 (proceed)"
        case .processed: return "1 (file contents processed)"
        case .rebooting: return "2 (rebooting)"
        case .finishing: return "3 (finishing)"
        case .abort: return "-1 (abort file transfer)"
        case .unrecognized: return "-2 (unrecognized file contents)"
        case .unacceptable: return "-3 (file data unacceptable)"
        }
    }
}

/// The data of an osdp_FTSTAT reply: FtAction (1 byte), FtDelay (2 LE, ms), FtStatusDetail (2 LE, signed),
/// FtUpdateMsgMax (2 LE; 0: no change asked for).
public struct OSDPFileTransferStatus: Equatable, Sendable {
    /// FtAction bits: 0x01 interleaving other commands is allowed, 0x02 leave the secure channel, 0x04 a poll
    /// reply is waiting. ScanGate sends 0: the panel sends the fragments back to back.
    public var action: UInt8 = 0
    public var delayMs: UInt16 = 0
    public var detail: OSDPFileStatusDetail
    public var updateMessageMax: UInt16 = 0

    public init(_ detail: OSDPFileStatusDetail) { self.detail = detail }

    public var data: [UInt8] {
        let status = UInt16(bitPattern: detail.rawValue)
        return [action, UInt8(truncatingIfNeeded: delayMs), UInt8(truncatingIfNeeded: delayMs >> 8),
                UInt8(truncatingIfNeeded: status), UInt8(truncatingIfNeeded: status >> 8),
                UInt8(truncatingIfNeeded: updateMessageMax), UInt8(truncatingIfNeeded: updateMessageMax >> 8)]
    }
}

/// One osdp_FILETRANSFER command's data: FtType (1), FtSizeTotal (4 LE), FtOffset (4 LE),
/// FtFragmentSize (2 LE), then FtFragmentSize bytes of FtData.
public struct OSDPFileFragment: Equatable, Sendable {
    public static let headerLength = 11
    public let type: UInt8
    public let totalSize: UInt32
    public let offset: UInt32
    public let bytes: [UInt8]

    /// Why the data is not a fragment (the FtFragmentSize disagrees with the data, or the fragment runs past
    /// FtSizeTotal).
    public struct Malformed: Error, Equatable, Sendable { public let why: String }

    public init(type: UInt8, totalSize: UInt32, offset: UInt32, bytes: [UInt8]) {
        self.type = type
        self.totalSize = totalSize
        self.offset = offset
        self.bytes = bytes
    }

    public static func parse(_ data: [UInt8]) throws(Malformed) -> OSDPFileFragment {
        guard data.count >= headerLength else {
            throw Malformed(why: "\(data.count) bytes, shorter than the \(headerLength)-byte header")
        }
        func le32(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[at + $1]) << (8 * UInt32($1)) } }
        let type = data[0], total = le32(1), offset = le32(5)
        let size = Int(data[9]) | Int(data[10]) << 8
        guard data.count - headerLength == size else {
            throw Malformed(why: "FtFragmentSize \(size) with \(data.count - headerLength) data bytes")
        }
        guard UInt64(offset) + UInt64(size) <= UInt64(total) else {
            throw Malformed(why: "a fragment of \(size) bytes at offset \(offset) runs past FtSizeTotal \(total)")
        }
        return OSDPFileFragment(type: type, totalSize: total, offset: offset, bytes: Array(data[headerLength...]))
    }
}

/// The reassembly of osdp_FILETRANSFER fragments into one ScanGate configuration file. Pure: bytes and the
/// time (the owner's clock) in, the osdp_FTSTAT reply out; the owner logs the notes and installs the
/// completed file.
///
/// - One file type is accepted, `configFileType` (1): the whole text of a ScanGate config file. Any other
///   FtType is refused with -2 (unrecognized).
/// - FtSizeTotal must be 1 to `maximumSize` (64 KiB); a larger one is refused with -3 at the first fragment,
///   before anything is kept.
/// - Fragments must arrive in order: each offset is the count of bytes received so far. A fragment sent
///   again (the previous one, same bytes) is answered as before and not added twice; any other offset
///   aborts the transfer (-1). A fragment at offset 0 always starts a new transfer, dropping a partial one.
/// - Nothing is acted on before the last byte has arrived. Then `check` judges the whole file, synchronously,
///   so the last osdp_FTSTAT already says 1 (processed: the owner installs it) or -2/-3 (refused, with the
///   reason in the note). With no `check` (ScanGate runs on flags only) every transfer is refused with -1.
/// - A partial transfer is kept (at most 64 KiB) until the panel finishes it, restarts it (offset 0), aborts
///   it (osdp_ABORT: `abort()`), or sends no fragment for `idleTimeoutMs` (30 s): then it is dropped
///   (`expire(at:)`, also run by each `receive`), and a later fragment at a non-zero offset is answered -1
///   (no transfer in progress). A fragment sent again counts as one for the idle timeout.
public struct OSDPFileTransfer {
    /// FtType of a ScanGate config file.
    public static let configFileType: UInt8 = 1
    /// The largest file accepted (FtSizeTotal).
    public static let maximumSize = 64 * 1024
    /// A partial transfer with no fragment for longer than this (milliseconds) is dropped. A panel sends
    /// the fragments back to back (FTSTAT asks for no delay), so 30 s of silence means it gave up or restarted.
    public static let idleTimeoutMs: Double = 30_000

    /// Judges a whole file: nil to accept it, else why it is refused and with which status.
    public typealias Check = ([UInt8]) -> (detail: OSDPFileStatusDetail, why: String)?

    /// What one fragment did.
    public struct Outcome: Equatable {
        public var status: OSDPFileTransferStatus
        /// The whole file, accepted by `check`: the owner installs it. Set once per transfer.
        public var completed: [UInt8]?
        /// A line for the log (a transfer started, finished, refused); nil for a fragment in the middle.
        public var note: String?
        /// A partial transfer dropped before this fragment was looked at, because no fragment had come for
        /// `idleTimeoutMs` (what `expire(at:)` returns): a line for a warning.
        public var expired: String?
        /// The status refuses the file or aborts the transfer.
        public var refused: Bool { status.detail.rawValue < 0 }
    }

    private enum State {
        case idle
        /// `lastAt`: when the last fragment of this transfer came (for the idle timeout).
        case receiving(total: Int, buffer: [UInt8], lastOffset: Int, lastAt: MonotonicInstant)
        /// The last fragment of a transfer, and its answer: the same fragment again gets the same answer.
        case finished(last: OSDPFileFragment, status: OSDPFileTransferStatus)
    }

    private var state: State = .idle
    private let check: Check?

    /// `check`: the daemon's check of a config file's text; nil: no config file to write, refuse transfers.
    public init(check: Check? = nil) { self.check = check }

    /// Bytes held for a transfer in progress.
    public var receivedBytes: Int {
        if case .receiving(_, let buffer, _, _) = state { return buffer.count }
        return 0
    }

    /// osdp_ABORT: drops a transfer in progress (and forgets the last fragment answered, so the same file
    /// sent again is a new transfer). Returns what was dropped, for the log; nil when no transfer was in
    /// progress.
    public mutating func abort() -> String? {
        let dropped = progress
        state = .idle
        return dropped.map { "the partial file transfer (\($0)) was aborted by the panel (ABORT) and dropped" }
    }

    /// Drops a transfer in progress that has had no fragment for more than `idleTimeoutMs` before `now`.
    /// Returns what was dropped, for a warning; nil when nothing was.
    public mutating func expire(at now: MonotonicInstant) -> String? {
        guard case .receiving(_, _, _, let lastAt) = state, let dropped = progress else { return nil }
        let idle = now.milliseconds(since: lastAt)
        guard idle > Self.idleTimeoutMs else { return nil }
        state = .idle
        return "the partial file transfer (\(dropped)) was dropped: no fragment for \(Int(idle / 1000)) s "
            + "(the limit is \(Int(Self.idleTimeoutMs / 1000)) s); the panel must start again at offset 0"
    }

    /// "N of M bytes received" for a transfer in progress.
    private var progress: String? {
        guard case .receiving(let total, let buffer, _, _) = state else { return nil }
        return "\(buffer.count) of \(total) bytes received"
    }

    /// One osdp_FILETRANSFER command's data, received at `now`. A partial transfer idle for more than
    /// `idleTimeoutMs` is dropped first (`Outcome.expired`).
    public mutating func receive(_ data: [UInt8], at now: MonotonicInstant) -> Outcome {
        let expired = expire(at: now)
        var outcome = receiveFragment(data, at: now)
        outcome.expired = expired
        return outcome
    }

    private mutating func receiveFragment(_ data: [UInt8], at now: MonotonicInstant) -> Outcome {
        let fragment: OSDPFileFragment
        do throws(OSDPFileFragment.Malformed) {
            fragment = try OSDPFileFragment.parse(data)
        } catch {
            return fail(.unacceptable, "a malformed osdp_FILETRANSFER: \(error.why)")
        }
        if case .finished(let last, let status) = state, last == fragment {
            return Outcome(status: status, completed: nil, note: nil)
        }
        if fragment.offset == 0 {
            return start(fragment, at: now)
        }
        guard case .receiving(let total, var buffer, let lastOffset, _) = state else {
            return fail(.abort, "a fragment at offset \(fragment.offset) with no transfer in progress (the first is at offset 0)")
        }
        guard fragment.type == Self.configFileType, Int(fragment.totalSize) == total else {
            return fail(.abort, "a fragment of file type \(fragment.type) and size \(fragment.totalSize) in the middle of a transfer of type \(Self.configFileType) and size \(total)")
        }
        let offset = Int(fragment.offset)
        if offset == lastOffset, offset + fragment.bytes.count == buffer.count,
           buffer[offset...].elementsEqual(fragment.bytes) {
            state = .receiving(total: total, buffer: buffer, lastOffset: lastOffset, lastAt: now)  // sent again
            return Outcome(status: OSDPFileTransferStatus(.proceed), completed: nil, note: nil)
        }
        guard offset == buffer.count else {
            return fail(.abort, "a fragment at offset \(offset) where \(buffer.count) was due (fragments must come in order)")
        }
        buffer += fragment.bytes
        return advance(total: total, buffer: buffer, last: fragment, at: now)
    }

    private mutating func start(_ fragment: OSDPFileFragment, at now: MonotonicInstant) -> Outcome {
        let restarted = receivedBytes > 0
        guard fragment.type == Self.configFileType else {
            return fail(.unrecognized, "file type \(fragment.type) refused (only \(Self.configFileType), a ScanGate config file)")
        }
        guard check != nil else {
            return fail(.abort, "file transfer refused: scangate runs without a config file (flags only), so there is no file to replace; start it with --config FILE")
        }
        guard fragment.totalSize >= 1, fragment.totalSize <= Self.maximumSize else {
            return fail(.unacceptable, "a file of \(fragment.totalSize) bytes refused (1 to \(Self.maximumSize) bytes)")
        }
        var outcome = advance(total: Int(fragment.totalSize), buffer: fragment.bytes, last: fragment, at: now)
        if outcome.note == nil {
            outcome.note = "file transfer of a \(fragment.totalSize)-byte config file started"
                + (restarted ? " (the panel restarted it; the partial file was dropped)" : "")
        }
        return outcome
    }

    private mutating func advance(total: Int, buffer: [UInt8], last: OSDPFileFragment, at now: MonotonicInstant) -> Outcome {
        guard buffer.count == total else {
            state = .receiving(total: total, buffer: buffer, lastOffset: Int(last.offset), lastAt: now)
            return Outcome(status: OSDPFileTransferStatus(.proceed), completed: nil, note: nil)
        }
        let outcome: Outcome
        if let problem = Self.textProblem(buffer) {
            outcome = refusal(.unrecognized, "the \(total)-byte file is not a config file: \(problem)")
        } else if let check, let refused = check(buffer) {
            outcome = refusal(refused.detail, "the \(total)-byte config file was refused, the config in force is unchanged: \(refused.why)")
        } else {
            outcome = Outcome(status: OSDPFileTransferStatus(.processed), completed: buffer,
                              note: "a \(total)-byte config file arrived and passed the check")
        }
        state = .finished(last: last, status: outcome.status)
        return outcome
    }

    /// A config file is UTF-8 text without NUL bytes.
    public static func textProblem(_ bytes: [UInt8]) -> String? {
        if let at = bytes.firstIndex(of: 0) { return "a NUL byte at offset \(at)" }
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return "not UTF-8 text (at about offset \(offset))"
            }
        }
    }

    private func refusal(_ detail: OSDPFileStatusDetail, _ why: String) -> Outcome {
        Outcome(status: OSDPFileTransferStatus(detail), completed: nil, note: "\(why); FTSTAT \(detail)")
    }

    private mutating func fail(_ detail: OSDPFileStatusDetail, _ why: String) -> Outcome {
        let dropped = receivedBytes
        state = .idle
        return refusal(detail, why + (dropped > 0 ? "; the \(dropped) bytes received are dropped" : ""))
    }
}

import OSDP
import Platform

/// osdp_FILETRANSFER reassembly (`OSDPFileTransfer`) on any sequence of command data from the bus.
///
/// Input: one set-up byte (bit 0: the check refuses every file; bit 1: no check at all, as with no config
/// file; bit 2: timed), then commands `[length low][length high][data...]`, each with a step byte before it
/// when timed: bits 0-5 the seconds that pass before the command, bit 6 the clock ticks (`expire(at:)`)
/// first, bit 7 the panel sends osdp_ABORT first (`abort()`). Each fragment whose header parses is also
/// fed to a reassembly model written here (with the idle timeout and ABORT), so a completed file is compared
/// with what the model put together, and a transfer is dropped for idleness exactly when the model says.
enum OSDPFileTransferFuzz {
    /// The model's transfer: its size, the bytes so far, the offset of the last fragment and when it came (s).
    typealias Model = (total: Int, bytes: [UInt8], lastOffset: Int, lastAt: Int)

    @Sendable static func run(_ bytes: [UInt8]) {
        guard let setup = bytes.first else { return }
        let refuses = setup & 1 != 0
        let noCheck = setup & 2 != 0
        let timed = setup & 4 != 0
        let checked = CheckLog()
        var transfer = noCheck ? OSDPFileTransfer() : OSDPFileTransfer { file in
            checked.files.append(file)
            return refuses ? (.unacceptable, "refused by the fuzz check") : nil
        }
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let timeoutSeconds = Int(OSDPFileTransfer.idleTimeoutMs / 1000)
        var seconds = 0
        // The model: the transfer started by the last good offset-0 fragment and not yet finished, refused,
        // aborted or idle for more than the timeout.
        var model: Model?
        /// The model's transfer, if it is still receiving and has been idle for more than the timeout.
        func idle(_ m: Model?) -> Bool {
            guard let m, m.bytes.count < m.total else { return false }
            return seconds - m.lastAt > timeoutSeconds
        }
        var at = 1
        while at + (timed ? 3 : 2) <= bytes.count {
            if timed {
                let step = bytes[at]
                at += 1
                seconds += Int(step & 0x3F)
                if step & 0x80 != 0 {
                    let dropped = transfer.abort()
                    require(transfer.receivedBytes == 0, "ABORT kept \(transfer.receivedBytes) bytes")
                    require(dropped.map { !$0.contains("\n") } ?? true, "an ABORT note of more than one line")
                    model = nil
                }
                if step & 0x40 != 0 {
                    let expected = idle(model)
                    let dropped = transfer.expire(at: start.adding(milliseconds: Double(seconds) * 1000))
                    require((dropped != nil) == expected, "expire dropped \(dropped ?? "nothing"); the model \(expected ? "has" : "has no") idle transfer")
                    require(dropped.map { !$0.contains("\n") } ?? true, "an expiry note of more than one line")
                    if expected { model = nil }
                    require(transfer.receivedBytes == (model.map { $0.bytes.count < $0.total ? $0.bytes.count : 0 } ?? 0),
                            "\(transfer.receivedBytes) bytes held after expire")
                }
            }
            let length = Int(bytes[at]) | Int(bytes[at + 1]) << 8
            at += 2
            let data = Array(bytes[at..<min(at + length, bytes.count)])
            at += data.count
            let before = checked.files.count
            let expires = idle(model)
            if expires { model = nil }
            // The model's transfer if this fragment starts, extends or repeats the last fragment of it (else as it was).
            var next = model
            if let fragment = try? OSDPFileFragment.parse(data) {
                let offset = Int(fragment.offset)
                if offset == 0 {
                    next = (Int(fragment.totalSize), fragment.bytes, 0, seconds)
                } else if var m = model, Int(fragment.totalSize) == m.total, fragment.type == OSDPFileTransfer.configFileType {
                    if offset == m.bytes.count {
                        m.bytes += fragment.bytes
                        m.lastOffset = offset
                        m.lastAt = seconds
                    } else if offset == m.lastOffset, offset + fragment.bytes.count == m.bytes.count,
                              m.bytes[offset...].elementsEqual(fragment.bytes) {
                        m.lastAt = seconds  // sent again: the transfer is not idle
                    }
                    next = m
                }
            }
            let outcome = transfer.receive(data, at: start.adding(milliseconds: Double(seconds) * 1000))
            require((outcome.expired != nil) == expires,
                    "expired: \(outcome.expired ?? "nothing"); the model \(expires ? "had" : "had no") idle transfer")
            require(outcome.expired.map { !$0.contains("\n") } ?? true, "an expiry note of more than one line")

            let status = outcome.status.data
            require(status.count == 7 && status[0] == 0 && status[5] == 0 && status[6] == 0, "FTSTAT data \(status)")
            require(outcome.note.map { !$0.contains("\n") } ?? true, "a note of more than one line")
            require(transfer.receivedBytes <= OSDPFileTransfer.maximumSize, "\(transfer.receivedBytes) bytes held")
            if outcome.refused { require(transfer.receivedBytes == 0, "a refusal kept \(transfer.receivedBytes) bytes") }
            require(checked.files.count - before <= 1, "the check ran \(checked.files.count - before) times for one fragment")
            if checked.files.count > before {
                require(!noCheck, "a check without one")
                require(outcome.status.detail != .proceed, "checked a file, then asked for more")
            }
            if let file = outcome.completed {
                require(outcome.status.detail == .processed, "a completed file with \(outcome.status.detail)")
                require(!refuses && !noCheck, "a file completed that the check refuses (or with no check)")
                require(checked.files.last == file && checked.files.count == before + 1, "a completed file that was not checked")
                require(OSDPFileTransfer.textProblem(file) == nil, "a completed file that is not text")
                require(file.count <= OSDPFileTransfer.maximumSize, "a completed file of \(file.count) bytes")
                require(next.map { $0.bytes == file && $0.total == file.count } ?? false,
                        "completed \(file.count) bytes; the model holds \(next.map { "\($0.bytes.count) of \($0.total)" } ?? "nothing")")
            } else {
                require(outcome.status.detail != .processed || checked.files.count == before,
                        "processed (not a repeat) without a file")
            }
            // A refusal or a completed file ends the model's transfer too.
            model = outcome.refused || outcome.completed != nil ? nil : next
        }
    }

    final class CheckLog { var files: [[UInt8]] = [] }
}

import OSDP

/// osdp_FILETRANSFER reassembly (`OSDPFileTransfer`) on any sequence of command data from the bus.
///
/// Input: one set-up byte (bit 0: the check refuses every file; bit 1: no check at all, as with no config
/// file), then commands `[length low][length high][data...]`. Each fragment whose header parses is also
/// fed to a reassembly model written here, so a completed file is compared with what the model put together.
enum OSDPFileTransferFuzz {
    @Sendable static func run(_ bytes: [UInt8]) {
        guard let setup = bytes.first else { return }
        let refuses = setup & 1 != 0
        let noCheck = setup & 2 != 0
        let checked = CheckLog()
        var transfer = noCheck ? OSDPFileTransfer() : OSDPFileTransfer { file in
            checked.files.append(file)
            return refuses ? (.unacceptable, "refused by the fuzz check") : nil
        }
        // The model: the bytes of the transfer started by the last good offset-0 fragment, and its size.
        var model: (total: Int, bytes: [UInt8])?
        var at = 1
        while at + 2 <= bytes.count {
            let length = Int(bytes[at]) | Int(bytes[at + 1]) << 8
            at += 2
            let data = Array(bytes[at..<min(at + length, bytes.count)])
            at += data.count
            let before = checked.files.count
            // The model's transfer if this fragment starts or extends it (else as it was).
            var next = model
            if let fragment = try? OSDPFileFragment.parse(data) {
                if fragment.offset == 0 {
                    next = (Int(fragment.totalSize), fragment.bytes)
                } else if var m = model, Int(fragment.totalSize) == m.total, fragment.type == OSDPFileTransfer.configFileType,
                          Int(fragment.offset) == m.bytes.count {
                    m.bytes += fragment.bytes
                    next = m
                }
            }
            let outcome = transfer.receive(data)

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

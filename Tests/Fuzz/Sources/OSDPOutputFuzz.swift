import Core
import OSDP

/// `osdpout`: `OSDPOutputControl.parse` (osdp_OUT's records, bytes from the bus) for 0 to 2 outputs
/// (the first input byte), then `levelAfter` and `statusData`. Invariants: the records are accepted
/// exactly when an independent reading says every one is whole, for an existing output, with a control
/// code 0 to 6 and a non-zero timer for codes 5 and 6; an accepted command list has one entry per
/// non-NOP record, in order, carrying that record's output, state and timer x 100 ms; a refusal is one
/// line of at most 200 characters; OSTATR data is one byte of 0 or 1 per output.
enum OSDPOutputFuzz {
    @Sendable static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let outputs = Int(input.byte()) % 3
        let data = input.rest()

        // The independent reading.
        var expected: [OSDPRelayCommand]? = data.isEmpty || data.count % 4 != 0 ? nil : []
        var at = 0
        while expected != nil, at + 4 <= data.count {
            let (output, code, timer) = (data[at], data[at + 1], Int(data[at + 2]) + 256 * Int(data[at + 3]))
            at += 4
            if Int(output) >= outputs || code > 6 || ((code == 5 || code == 6) && timer == 0) {
                expected = nil
                break
            }
            let command: RelayCommand?
            switch code {
            case 1: command = .permanent(on: false, abortTimed: true)
            case 2: command = .permanent(on: true, abortTimed: true)
            case 3: command = .permanent(on: false, abortTimed: false)
            case 4: command = .permanent(on: true, abortTimed: false)
            case 5: command = .temporary(on: true, milliseconds: timer * 100)
            case 6: command = .temporary(on: false, milliseconds: timer * 100)
            default: command = nil
            }
            if let command { expected?.append(OSDPRelayCommand(output: output, command: command)) }
        }

        do throws(OSDPOutputControl.Invalid) {
            let commands = try OSDPOutputControl.parse(data[...], outputs: outputs)
            require(expected == commands, "accepted \(commands) where \(String(describing: expected)) was due, outputs \(outputs), data \(data.prefix(40))")
            let levels = (0..<outputs).map { OSDPOutputControl.levelAfter(commands, output: UInt8($0), active: $0 % 2 == 0) }
            let status = OSDPOutputControl.statusData(levels)
            require(status.count == outputs && status.allSatisfy { $0 <= 1 }, "OSTATR data \(status) for \(outputs) outputs")
        } catch {
            require(expected == nil, "refused (\(error.why)) what reads as \(String(describing: expected)), outputs \(outputs)")
            require(!error.why.isEmpty && error.why.count <= 200 && !error.why.contains("\n"), "refusal not one short line: \(error.why)")
        }
    }
}

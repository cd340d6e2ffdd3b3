import Core

/// One record of osdp_OUT (SIA OSDP 2.2, output control): the output it is for and what to do with it.
public struct OSDPRelayCommand: Equatable, Sendable {
    /// 0 = the first output. ScanGate has one: output 0, the door relay.
    public var output: UInt8
    public var command: RelayCommand

    public init(output: UInt8, command: RelayCommand) {
        self.output = output
        self.command = command
    }
}

/// osdp_OUT and osdp_OSTATR, without I/O. Bytes from the bus are untrusted: every record is checked
/// before any is acted on, so a command is applied whole or not at all.
public enum OSDPOutputControl {
    /// Bytes per osdp_OUT record: output number, control code, timer LSB, timer MSB.
    public static let recordLength = 4
    /// The timer's unit.
    public static let timerUnitMs = 100

    /// Why a command was refused (NAK 09, unable to process the record).
    public struct Invalid: Error, Equatable, Sendable {
        public let why: String
    }

    /// osdp_OUT's control codes.
    public enum ControlCode: UInt8, Sendable {
        /// NOP: do not alter this output.
        case nop = 0
        /// Permanent state OFF, abort a timed operation.
        case permanentOffAbort = 1
        /// Permanent state ON, abort a timed operation.
        case permanentOnAbort = 2
        /// Permanent state OFF, let a timed operation complete.
        case permanentOffAllow = 3
        /// Permanent state ON, let a timed operation complete.
        case permanentOnAllow = 4
        /// Temporary state ON for the timer, then back to the permanent state.
        case temporaryOn = 5
        /// Temporary state OFF for the timer, then back to the permanent state.
        case temporaryOff = 6
    }

    /// The commands in `data` (NOP records left out), in order. `outputs`: how many outputs this PD has
    /// (0 when no door relay is configured). The caller has checked that the length is a non-zero
    /// multiple of `recordLength` (NAK 02 otherwise); this refuses an output number that does not exist,
    /// an unknown control code and a temporary state with a zero timer.
    public static func parse(_ data: ArraySlice<UInt8>, outputs: Int) throws(Invalid) -> [OSDPRelayCommand] {
        guard !data.isEmpty, data.count % recordLength == 0 else {
            throw Invalid(why: "\(data.count) bytes are not whole \(recordLength)-byte records")
        }
        var commands: [OSDPRelayCommand] = []
        var at = data.startIndex
        while at < data.endIndex {
            let output = data[at]
            let rawCode = data[at + 1]
            let timer = Int(data[at + 2]) | Int(data[at + 3]) << 8
            at += recordLength
            guard Int(output) < outputs else {
                throw Invalid(why: outputs == 0 ? "output \(output): this reader has no outputs (no door relay configured)"
                                                : "output \(output): this reader has outputs 0 to \(outputs - 1)")
            }
            guard let code = ControlCode(rawValue: rawCode) else {
                throw Invalid(why: "output \(output): control code \(rawCode) (0 to 6)")
            }
            let command: RelayCommand
            switch code {
            case .nop: continue
            case .permanentOffAbort: command = .permanent(on: false, abortTimed: true)
            case .permanentOnAbort: command = .permanent(on: true, abortTimed: true)
            case .permanentOffAllow: command = .permanent(on: false, abortTimed: false)
            case .permanentOnAllow: command = .permanent(on: true, abortTimed: false)
            case .temporaryOn, .temporaryOff:
                guard timer > 0 else {
                    throw Invalid(why: "output \(output): a temporary state (control code \(rawCode)) with a zero timer")
                }
                command = .temporary(on: code == .temporaryOn, milliseconds: timer * timerUnitMs)
            }
            commands.append(OSDPRelayCommand(output: output, command: command))
        }
        return commands
    }

    /// What osdp_OSTATR reports for an output that was at `active` once `commands` apply: the commanded
    /// state where the commands decide it (the relay thread acts on them just after the reply), the
    /// current one otherwise (NOP, or a permanent state under a temporary one still running).
    public static func levelAfter(_ commands: [OSDPRelayCommand], output: UInt8, active: Bool) -> Bool {
        var level = active
        var timedRunning = false
        for c in commands where c.output == output {
            switch c.command {
            case .permanent(let on, let abortTimed):
                if abortTimed || !timedRunning { level = on }
                if abortTimed { timedRunning = false }
            case .temporary(let on, _):
                level = on
                timedRunning = true
            }
        }
        return level
    }

    /// osdp_OSTATR's data: one byte per output, 1 = active.
    public static func statusData(_ levels: [Bool]) -> [UInt8] { levels.map { $0 ? 1 : 0 } }
}

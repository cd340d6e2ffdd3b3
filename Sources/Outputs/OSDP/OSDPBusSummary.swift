/// What a passive listener saw on an OSDP line, for `scangate doctor`: which addresses the panel polls,
/// whether it uses the secure channel, whether other readers answer, how many frames were damaged.
/// Feed it the events of an `OSDPFrameReader` over the bytes read from the port; it never answers.
public struct OSDPBusSummary: Equatable, Sendable {
    /// Commands seen per address (0x7F: broadcast).
    public private(set) var commandsByAddress: [UInt8: Int] = [:]
    /// Replies seen per replying address (without the reply bit).
    public private(set) var repliesByAddress: [UInt8: Int] = [:]
    /// Commands that carried a security block (the panel runs, or tries, the secure channel).
    public private(set) var secureCommands = 0
    /// osdp_CHLNG commands (the panel opening a secure channel).
    public private(set) var challenges = 0
    /// Frames with a wrong check, a bad length, or cut off.
    public private(set) var damaged = 0

    public init() {}

    public mutating func add(_ events: [OSDPFrameEvent]) {
        for event in events {
            switch event {
            case .frame(let frame):
                if frame.isReply {
                    repliesByAddress[frame.address & 0x7F, default: 0] += 1
                } else {
                    commandsByAddress[frame.address, default: 0] += 1
                    if frame.hasSecurityBlock { secureCommands += 1 }
                    let body = frame.body
                    let codeIndex = frame.hasSecurityBlock ? body.startIndex + Int(body.first ?? 0) : body.startIndex
                    if codeIndex < body.endIndex, body[codeIndex] == OSDPCommand.challenge.rawValue { challenges += 1 }
                }
            case .badCheck, .badLength, .interrupted:
                damaged += 1
            }
        }
    }

    /// One line for the doctor: "polls for address 0 (42 commands, 40 with a security block); replies
    /// from 1; 2 damaged frames", or what is missing.
    public var description: String {
        guard !commandsByAddress.isEmpty else {
            return damaged > 0 ? "no valid command; \(damaged) damaged frame(s) (check speed, A/B, termination)"
                               : "no traffic from a panel"
        }
        let addresses = commandsByAddress.keys.sorted().map { $0 == OSDPWire.broadcast ? "broadcast" : "address \($0)" }
        var text = "commands for \(addresses.joined(separator: ", ")) (\(commandsByAddress.values.reduce(0, +)) in all"
        text += secureCommands > 0 ? ", \(secureCommands) with a security block)" : ", none secure)"
        if !repliesByAddress.isEmpty {
            text += "; replies from " + repliesByAddress.keys.sorted().map { "address \($0)" }.joined(separator: ", ")
        }
        if damaged > 0 { text += "; \(damaged) damaged frame(s)" }
        return text
    }
}

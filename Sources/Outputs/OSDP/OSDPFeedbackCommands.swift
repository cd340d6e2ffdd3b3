import Core

/// osdp_LED and osdp_BUZ records, turned into the feedback seam's commands.
enum OSDPFeedbackCommands {
    /// A record the PD cannot process: the command is answered NAK 09.
    struct Invalid: Error { let why: String }

    /// OSDP's colour codes (SIA OSDP 2.2, osdp_LED): 0 black/off, 1 red, 2 green, 3 amber, 4 blue,
    /// 5 magenta, 6 cyan, 7 white. The reader's LED has a red and a green element (amber is both), so a
    /// colour maps to the elements it contains: blue shows as off, magenta as red, cyan as green and
    /// white as amber.
    static func color(_ code: UInt8) throws(Invalid) -> LEDColor {
        switch code {
        case 0, 4: return .off
        case 1, 5: return .red
        case 2, 6: return .green
        case 3, 7: return .amber
        default: throw Invalid(why: "colour code \(code) (0-7)")
        }
    }

    /// One 14-byte LED record (reader, LED number, the temporary state's control, on time, off time,
    /// on colour, off colour, timer LSB, MSB, then the permanent state's control, on, off, on colour,
    /// off colour; times in units of 100 ms). nil: a record for another reader or LED (this PD has
    /// reader 0 with LED 0), or one that changes nothing.
    static func led(_ r: ArraySlice<UInt8>) throws(Invalid) -> LEDCommand? {
        let b = Array(r)
        guard b.count == 14 else { throw Invalid(why: "LED record of \(b.count) bytes") }
        guard b[0] == 0, b[1] == 0 else { return nil }
        var command = LEDCommand()
        switch b[2] {
        case 0: break
        case 1: command.temporary = .cancel
        case 2:
            guard b[3] != 0 || b[4] != 0 else { throw Invalid(why: "temporary LED state with on and off time both 0") }
            let blink = LEDBlink(onColor: try color(b[5]), offColor: try color(b[6]),
                                 onMs: Int(b[3]) * 100, offMs: Int(b[4]) * 100)
            let timer = Int(b[7]) | Int(b[8]) << 8
            command.temporary = .show(blink, for: .milliseconds(timer * 100))
        default: throw Invalid(why: "temporary LED control code \(b[2]) (0-2)")
        }
        switch b[9] {
        case 0: break
        case 1:
            guard b[10] != 0 || b[11] != 0 else { throw Invalid(why: "permanent LED state with on and off time both 0") }
            command.permanent = LEDBlink(onColor: try color(b[12]), offColor: try color(b[13]),
                                         onMs: Int(b[10]) * 100, offMs: Int(b[11]) * 100)
        default: throw Invalid(why: "permanent LED control code \(b[9]) (0-1)")
        }
        return command.temporary == nil && command.permanent == nil ? nil : command
    }

    /// One 5-byte buzzer record (reader, tone code, on time, off time, count; times in 100 ms units).
    /// Tone 0 (none) and 1 (off) stop the tone; 2 and above are the default tone. A count of 0 sounds
    /// until the next command replaces it. nil: a record for another reader.
    static func buzzer(_ r: ArraySlice<UInt8>) throws(Invalid) -> ToneCommand? {
        let b = Array(r)
        guard b.count == 5 else { throw Invalid(why: "buzzer record of \(b.count) bytes") }
        guard b[0] == 0 else { return nil }
        if b[1] <= 1 { return .silence }
        guard b[2] != 0 else { throw Invalid(why: "buzzer tone with an on time of 0") }
        return ToneCommand(onMs: Int(b[2]) * 100, offMs: Int(b[3]) * 100,
                           duration: b[4] == 0 ? .untilReplaced : .cycles(Int(b[4])))
    }
}

import Core

extension OptionTable {
    public static let beep: [OptionSpec] = [
        OptionSpec("beep", .beep, .value(placeholder: "PATTERN"), default: "off",
                   help: "beep through ALSA on a good read: \(BeepPattern.syntaxHelp); 'default' is "
                       + "\(BeepPattern.defaultGood), 'off' disables the beep",
                   apply: { s, v in s.beep.good = try beepPattern(v, default: BeepPattern.defaultGood) },
                   show: { $0.beep.good?.description ?? "off" }),
        OptionSpec("beep-error", .beep, .value(placeholder: "PATTERN"), default: BeepPattern.defaultError.description,
                   help: "beep for a rejected read (same syntax as --beep; 'off': silent)",
                   apply: { s, v in s.beep.error = try beepPattern(v, default: BeepPattern.defaultError) },
                   show: { $0.beep.error?.description ?? "off" }),
        OptionSpec("beep-cue", .beep, .value(placeholder: "PATTERN"), default: BeepPattern.defaultCue.description,
                   help: "with feedback controller: the read cue's beep on each read (same syntax as --beep; 'off': silent)",
                   apply: { s, v in s.beep.cue = try beepPattern(v, default: BeepPattern.defaultCue) },
                   show: { $0.beep.cue?.description ?? "off" }),
        OptionSpec("beep-tone-hz", .beep, .value(placeholder: "HZ"), default: "2000",
                   help: "pitch of the tones a door controller asks for (OSDP BUZ, Wiegand beeper input, MQTT), 20-20000",
                   apply: { s, v in s.beep.toneHertz = try ParseValue.int(v, in: BeepPattern.hertzRange) },
                   show: { String($0.beep.toneHertz) }),
        OptionSpec("beep-device", .beep, .value(placeholder: "NAME"), default: "default",
                   help: "ALSA playback device: default, hw:CARD,DEV, plughw:..., sysdefault:CARD=NAME",
                   apply: { s, v in
                       let name = v.trimmingSpaces
                       guard !name.isEmpty,
                             !name.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
                           throw OptionValueError("'\(v)' is not an ALSA device name (e.g. default, hw:1,0, "
                                                  + "plughw:CARD=Headphones; no spaces or control characters)")
                       }
                       s.beep.device = name
                   },
                   show: { $0.beep.device }),
        OptionSpec("beep-volume", .beep, .value(placeholder: "0..1"), default: "0.5",
                   help: "beep amplitude as a fraction of full scale (linear), 0 to 1",
                   apply: { s, v in s.beep.volume = try ParseValue.double(v, in: 0...1) },
                   show: { ParseValue.format($0.beep.volume) }),
    ]

    /// A pattern, or `default` / `off`; errors say what is allowed.
    private static func beepPattern(_ text: String, default defaultPattern: BeepPattern) throws -> BeepPattern? {
        switch text.trimmingSpaces.lowercased() {
        case "off", "none", "false", "no": return nil
        case "default", "on", "true", "yes": return defaultPattern
        default:
            do {
                return try BeepPattern(parsing: text)
            } catch {
                throw OptionValueError("\(error.message); or 'default', 'off'")
            }
        }
    }
}

import Core

extension OptionTable {
    public static let feedback: [OptionSpec] = [
        OptionSpec("feedback", .feedback, .value(placeholder: "MASTER"), default: "local",
                   help: "who decides grant and deny on the LEDs, buzzer and beep: local (the read: good-read or error pattern), controller (the door controller's commands: OSDP LED/BUZ, Wiegand LED and beeper inputs, a serial reply, MQTT; a read plays only the read cue)",
                   apply: { s, v in
                       s.feedback.master = try ParseValue.choice(v, FeedbackSettings.Master.allCases.map { ($0.rawValue, $0) })
                   },
                   show: { $0.feedback.master.rawValue }),
        OptionSpec("feedback-read-cue", .feedback, .flag, default: "true",
                   help: "with feedback controller: a short buzz and beep on each read while the controller decides (cue-buzz-ms, beep-cue)",
                   apply: { s, v in s.feedback.readCue = try ParseValue.bool(v) },
                   show: { String($0.feedback.readCue) }),
    ]
}

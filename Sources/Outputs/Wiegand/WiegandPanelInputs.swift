import Core
import GPIO
import InputLines
import Platform
import Runtime
import Settings

/// The panel's LED and beeper wires (`wiegand-led-input`, `wiegand-beeper-input`): debounced GPIO inputs
/// (`DebouncedInputs`, a thread with its own chip handle). A level counts once it has held for the
/// debounce time (contact bounce of a relay output is 1-5 ms); then it becomes a feedback command with
/// origin "wiegand":
/// - LED input active: the LED permanently green (a temporary state such as the read cue is cancelled);
///   released: permanently off.
/// - Beeper input active: a tone until replaced; released: silence.
/// A missing or busy line is logged with the fix and retried; when the inputs close or the chip goes away
/// while an input is active, its release is played, so the reader is not left green or beeping.
final class WiegandPanelInputs: Sendable {
    enum Role: String, Sendable, CaseIterable {
        case led, beeper

        var option: String { self == .led ? WiegandSettings.Option.ledInput : WiegandSettings.Option.beeperInput }
        var title: String { self == .led ? "LED input" : "beeper input" }

        /// The command for this input becoming active or released.
        func command(active: Bool) -> FeedbackCommand {
            switch (self, active) {
            case (.led, true):
                return FeedbackCommand(led: LEDCommand(temporary: .cancel, permanent: .steady(.green)))
            case (.led, false):
                return FeedbackCommand(led: LEDCommand(permanent: .steady(.off)))
            case (.beeper, true):
                return FeedbackCommand(tone: ToneCommand(onMs: 1000, offMs: 0, duration: .untilReplaced))
            case (.beeper, false):
                return FeedbackCommand(tone: .silence)
            }
        }
    }

    struct State {
        var open: [Role] = []
        var error: String?
        var lastErrorAt: Int64?
        var active: [Role: Bool] = [:]
    }

    private let inputs: DebouncedInputs

    init(settings: WiegandSettings, calls: any GpiodCalls, feedback: FeedbackSink, logger: Logger,
         runtime: WiegandRuntime) throws(SystemError) {
        var specs: [DebouncedInputs.Input] = []
        let activeLow = !settings.inputActiveHigh
        for (role, line) in [(Role.led, settings.ledInput), (Role.beeper, settings.beeperInput)] {
            guard let line else { continue }
            specs.append(.init(name: role.rawValue, title: "panel " + role.title, option: role.option, line: line, activeLow: activeLow))
        }
        inputs = try DebouncedInputs(prefix: "Wiegand", chip: settings.chip ?? "", inputs: specs,
                                     runtime: .init(debounceMs: Double(runtime.debounceMs), retryMs: Double(runtime.retryMs),
                                                    releaseOnClose: true, groupTitle: "panel inputs"),
                                     calls: calls, logger: logger) { name, active in
            guard let role = Role(rawValue: name) else { return }
            feedback.play(.command(role.command(active: active)), origin: "wiegand")
        }
    }

    var snapshot: State {
        let s = inputs.snapshot
        var active: [Role: Bool] = [:]
        for (name, level) in s.levels { if let role = Role(rawValue: name) { active[role] = level } }
        return State(open: s.open.compactMap(Role.init(rawValue:)), error: s.error, lastErrorAt: s.lastErrorAt, active: active)
    }

    /// Stops the thread (within its 50 ms wait slice), releases the inputs, plays the release of any
    /// input still active. Returns by `deadline`.
    func close(deadline: MonotonicInstant) {
        inputs.close(deadline: deadline)
    }
}

import Components
import Core
import GPIO
import Settings
import Sound

extension GPIOFeedback {
    /// The `[gpio]` feedback device: LEDs, buzzer and status LED on libgpiod lines.
    public static func component(calls: any GpiodCalls = SystemGpiodCalls()) -> Component {
        Component(
            name: "gpio", options: OptionTable.gpio,
            role: .feedback(FeedbackFactory(section: \.gpio) { settings, logger in
                GPIOFeedback.make(settings: settings, logger: logger, calls: calls, clock: SystemFeedbackClock())
            }),
            doctorFlags: [DoctorFlag("blink", help: "drive each LED and the buzzer active once (300 ms), one after the other",
                                     howToConfigure: "set gpio-chip and at least one of led-green, led-red, status-led, buzzer in [gpio]",
                                     isConfigured: { $0.gpio.hasLines })],
            lineClaims: { settings in
                guard let chip = settings.gpio.chip else { return [] }
                return GPIORole.allCases.compactMap { role in
                    settings.gpio.lines[role].map {
                        GPIOLineClaim(section: "gpio", option: String(role.flag.dropFirst(2)), chip: chip, line: $0)
                    }
                }
            },
            doctor: { settings, context in
                guard settings.gpio.chip != nil else { return [] }
                return GPIODoctor(settings: settings.gpio, options: context.options, logger: context.logger,
                                       calls: calls).run()
            })
    }
}

extension BeepFeedback {
    /// The `[beep]` feedback device: tones through ALSA.
    public static func component(calls: any ALSACalls = LibASound()) -> Component {
        Component(
            name: "beep", options: OptionTable.beep,
            role: .feedback(FeedbackFactory(section: \.beep) { settings, logger in
                guard settings.enabled else { return nil }
                return BeepFeedback(settings: settings, logger: logger, calls: calls)
            }),
            doctorFlags: [DoctorFlag("test-beep", help: "play the good-read beep on the sound device",
                                     howToConfigure: "set beep = yes (and beep-device) in [beep]",
                                     isConfigured: { $0.beep.enabled })],
            doctor: { settings, context in
                guard settings.beep.enabled else { return [] }
                return SoundDoctor(settings: settings.beep, options: context.options, calls: calls).run()
            })
    }
}

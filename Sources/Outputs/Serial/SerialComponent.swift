import Components
import Core
import SerialLine
import Settings

extension SerialOutput {
    /// The `[serial]` door output: one frame per read on a tty, the controller's reply as feedback.
    public static func component(system: any SerialSystemCalls = GlibcSerialSystemCalls()) -> Component {
        Component(
            name: "serial", options: OptionTable.serial,
            role: .output(OutputFactory(
                section: \.serial, isConfigured: { $0.path != nil }, validate: { try SerialOutput.validate($0) },
                make: { settings, context in
                    try SerialOutput.validate(settings.serial)
                    return SerialOutput(settings: settings.serial, logger: context.logger, feedback: context.feedback,
                                        system: system)
                })),
            doctorFlags: [DoctorFlag("test-frame", help: "write one frame with the payload SCANGATE-TEST to the serial port",
                                     howToConfigure: "set serial = /dev/ttyUSB0 (the controller's port) in [serial]",
                                     isConfigured: { $0.serial.path != nil })],
            doctor: { settings, context in
                guard settings.serial.path != nil else { return [] }
                return SerialDoctor(settings: settings.serial, options: context.options, system: system).run()
            })
    }
}

extension SerialOutput {
    /// Every check of `[serial]`: the section's own (`SerialSettings.validate()`, in Settings/) and the one
    /// that needs this output's frame encoder.
    public static func validate(_ settings: SerialSettings) throws(UsageError) {
        try settings.validate()
        try SerialFrameEncoder(settings: settings).checkGeneratedBytes(settings)
    }
}

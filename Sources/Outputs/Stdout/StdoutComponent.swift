import Components
import Core
import Settings

extension StdoutOutput {
    /// The `[output]` report on stdout: one line per read.
    public static let component = Component(
        name: "stdout", options: OptionTable.output,
        role: .output(OutputFactory(section: \.output, isConfigured: { $0.format != .none },
                                    make: { settings, context in
                                        StdoutOutput(settings: settings.output, logger: context.logger)
                                    })),
        doctor: { _, _ in [] })
}

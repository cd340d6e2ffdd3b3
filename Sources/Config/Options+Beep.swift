import Core

extension OptionTable {
    static let beep: [OptionSpec] = []
}

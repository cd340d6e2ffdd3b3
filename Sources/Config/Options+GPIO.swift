import Core

extension OptionTable {
    static let gpio: [OptionSpec] = []
}

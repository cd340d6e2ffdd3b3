import Core

extension OptionTable {
    static let serial: [OptionSpec] = []
}

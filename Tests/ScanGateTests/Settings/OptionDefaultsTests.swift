import XCTest
import Settings

/// Each default is written in two places: the settings struct (what `run` uses when the option is not
/// given) and the option's `default:` (what --help, check-config and deploy/scangate.conf show). This
/// holds them equal for every option of every section.
final class OptionDefaultsTests: XCTestCase {
    func testEveryOptionsShownDefaultIsTheSettingsStructsDefault() {
        let defaults = RunSettings()
        var disagreements: [String] = []
        let checked = OptionTable.all.filter { !$0.repeatable }
        XCTAssertGreaterThan(checked.count, 100, "every section's options, not a few")
        XCTAssertEqual(Set(checked.map(\.section)).count, Set(OptionTable.all.map(\.section)).count)
        for spec in checked {
            let used = spec.show(defaults)
            if used != spec.defaultText {
                disagreements.append("[\(spec.section)] \(spec.name): default: \"\(spec.defaultText)\" but the settings struct starts at \"\(used)\"")
            }
        }
        XCTAssertEqual(disagreements, [], disagreements.joined(separator: "\n"))
    }
}

import Config
import Core
import Settings

/// The INI config: any text either parses and applies or fails with a UsageError (typed throws make
/// any other error impossible; the fuzzer looks for crashes and traps). What check-config prints for
/// an accepted file must read back as the same settings.
enum ConfigFileFuzz {
    @Sendable static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        var settings = RunSettings()
        do throws(UsageError) {
            let entries = try ConfigFile.parse(text, name: "fuzz.conf")
            try ConfigFile.apply(entries, from: "fuzz.conf", to: &settings)
        } catch {
            require(error.description.hasPrefix("fuzz.conf"), "error does not name the file: \(error)")
            require(!error.description.contains("\n"), "error is not one line: \(error)")
            return
        }
        let rendered = ConfigFileRendering.effective(settings)
        var again = RunSettings()
        do throws(UsageError) {
            try ConfigFile.apply(ConfigFile.parse(rendered, name: "effective.conf"), from: "effective.conf", to: &again)
        } catch {
            require(false, "check-config output does not read back: \(error)\n--- input:\n\(text)\n--- output:\n\(rendered)")
        }
        require(again == settings, "check-config output reads back as different settings\n--- input:\n\(text)\n--- output:\n\(rendered)")
    }
}

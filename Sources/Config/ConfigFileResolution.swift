import Core
import Settings

/// Where `scangate run` gets its settings: defaults, then the config file, then command-line flags.
public enum Configuration {
    /// Defaults → `configPath` (if any) → `flagAssignments` (from `CommandLineParser`), in that order,
    /// so a flag overrides the file. Repeatable options (`camera-control`) accumulate: the file's first,
    /// then the flags'. Any error is a `UsageError` naming the file, line and key, or the flag.
    public static func resolve(configPath: String?, flagAssignments: [(OptionSpec, String)],
                               table: [OptionSpec] = OptionTable.all) throws(UsageError) -> RunSettings {
        var settings = RunSettings()
        if let path = configPath {
            let entries = try ConfigFile.load(path: path, table: table)
            try ConfigFile.apply(entries, from: path, to: &settings)
        }
        try CommandLineParser.apply(flagAssignments, to: &settings)
        return settings
    }
}

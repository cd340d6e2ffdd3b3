import Core
#if canImport(Glibc)
@_exported import Glibc
#endif

public enum ScanGateCommand {
    public static func main(arguments: [String]) -> Int32 { 0 }
}

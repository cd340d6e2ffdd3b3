#if canImport(Glibc)
import Glibc
#endif

/// The fuzz executable. Built with `-sanitize=fuzzer,address` (Tests/Fuzz/run) it hands control to
/// libFuzzer's driver for the target named by `SCANGATE_FUZZ_TARGET`; built without libFuzzer it runs
/// each file given on the command line through that target once (to replay a crash under a debugger).
///
/// SwiftPM links executables with `main` aliased to this module's entry point, so libFuzzer's own `main`
/// is never used: `LLVMFuzzerRunDriver` is looked up instead (the run script links it in and exports it).
@main
enum FuzzMain {
    typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    typealias RunDriver = @convention(c) (UnsafeMutablePointer<CInt>,
                                          UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                                          TestOneInput) -> CInt

    static func main() {
        let name = selectedTargetName
        guard FuzzTargets.byName[name] != nil else {
            let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
            printError("ScanGateFuzz: set SCANGATE_FUZZ_TARGET to one of: \(names)")
            exit(2)
        }
        if CommandLine.arguments.dropFirst().first == "--seed-reach" {
            exit(seedReach(name, directories: Array(CommandLine.arguments.dropFirst(2))))
        }
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "LLVMFuzzerRunDriver") {
            let driver = unsafeBitCast(symbol, to: RunDriver.self)
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(driver(&argc, &argv, LLVMFuzzerTestOneInput))
        }
        // No libFuzzer: replay the given files.
        for path in CommandLine.arguments.dropFirst() {
            guard let bytes = readFile(path) else {
                printError("ScanGateFuzz: cannot read \(path)")
                exit(2)
            }
            FuzzTargets.run(name, bytes)
            printError("ScanGateFuzz: \(name): \(path): ok")
        }
    }

    /// `ScanGateFuzz --seed-reach DIR...`: runs every file in the folders through the target's reach
    /// function and prints how many reach each step it must reach; 1 if some step is reached by none.
    static func seedReach(_ name: String, directories: [String]) -> CInt {
        guard let target = FuzzTargets.byName[name], let reach = target.reach else {
            printError("\(name): no seed reach check")
            return 0
        }
        var counts: [String: Int] = [:]
        var files = 0
        for directory in directories {
            guard let folder = opendir(directory) else {
                printError("ScanGateFuzz: cannot open \(directory)")
                return 2
            }
            defer { closedir(folder) }
            var names: [String] = []
            while let entry = readdir(folder) {
                let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if entryName != "." && entryName != ".." { names.append(entryName) }
            }
            for entryName in names.sorted() {
                guard let bytes = readFile(directory + "/" + entryName) else {
                    printError("ScanGateFuzz: cannot read \(directory)/\(entryName)")
                    return 2
                }
                files += 1
                for step in reach(bytes) { counts[step, default: 0] += 1 }
            }
        }
        let missed = target.mustReach.filter { counts[$0, default: 0] == 0 }
        printError("\(name): seeds reaching " + target.mustReach.map { "\($0): \(counts[$0, default: 0]) of \(files)" }.joined(separator: "; "))
        if !missed.isEmpty {
            printError("INVARIANT FAILED: no \(name) seed reaches \(missed.joined(separator: ", "))")
            return 1
        }
        return 0
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return ferror(file) == 0 ? bytes : nil
    }
}

/// libFuzzer's entry point: one input for the selected target.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTargets.run(selectedTargetName, bytes)
    return 0
}

/// The target this process fuzzes, from the environment (read once).
let selectedTargetName: String = getenv("SCANGATE_FUZZ_TARGET").map { String(cString: $0) } ?? ""

func printError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
    }
}

/// A broken invariant: print what and why, then abort so libFuzzer saves the input as a crash.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
             file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        printError("INVARIANT FAILED (\(file):\(line)): \(message())")
        abort()
    }
}

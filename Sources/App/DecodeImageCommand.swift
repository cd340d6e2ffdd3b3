import Config
import Core
import Decoding
import Images
import Platform
import Settings
import StillImages

/// `scangate decode-image FILE...`: prints each payload found on its own line as raw bytes.
/// Exit 0 when anything was found, 1 when nothing was, 2 when a file cannot be read (the other files
/// are still decoded).
enum DecodeImageCommand {
    static let help = """
        Usage: scangate decode-image [--symbologies LIST] [--no-test-inverted] [--native-upc] [--raw-qr]
                                     [--verbose] FILE...
               scangate decode-image --corpus DIR [--verbose]

        Decodes the codes in PNG, JPEG or PGM images and prints each payload on its own line, as raw bytes.
        When one zbar pass finds nothing, further passes look at rescaled, contrast-stretched and thresholded
        copies, then zxing-cpp's, and last a light sticker on a darker, wavy surface flattened by its
        outline (docs/accuracy.md).
          --symbologies LIST   codes to look for, or all (default: all of \(Symbology.cliNames))
          --no-test-inverted   do not also look for light-on-dark codes
          --native-upc         UPC-A as 12 digits and UPC-E as 8 (default: the 13-digit GTIN form)
          --raw-qr             QR payload bytes exactly as encoded (default: text converted to UTF-8 from
                               Shift_JIS or ISO-8859-1 when it is not UTF-8 already)
          --verbose            prefix each line with FILE:, the symbology and the pass that read it
          --corpus DIR         score the real-photo corpus in DIR (eval.py's rules) and print the table
        Each file in which nothing was found is named on stderr ("FILE: no code found").
        Exit: 0 something was found, 1 nothing was, 2 a file could not be read or a flag is wrong.
        """

    static func run(_ arguments: [String]) -> Int32 {
        var settings = imageDecoderDefaults()
        var verbose = false
        var corpus: String?
        var files: [String] = []
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help":
                    print(help)
                    return 0
                case "--verbose": verbose = true
                case "--native-upc":
                    settings.upcaAsEAN13 = false
                    settings.upceAsGTIN13 = false
                case "--raw-qr": settings.qrTextAsUTF8 = false
                case "--corpus": corpus = try args.value(arg, "a DIR (the corpus with samples/)")
                case "--symbologies":
                    let names = ParseValue.list(try args.value(arg, "a LIST (all, or any of \(Symbology.cliNames))"))
                    let set: Set<Symbology>
                    switch Symbology.set(named: names) {
                    case .success(let named): set = named
                    case .failure(let e):
                        throw UsageError("--symbologies: '\(e.name)' is not a symbology (allowed: all, or any of \(Symbology.cliNames))")
                    }
                    guard !set.isEmpty else { throw UsageError("--symbologies is empty (allowed: all, or any of \(Symbology.cliNames))") }
                    settings.symbologies = set
                default:
                    if let on = try args.switchValue(arg, "test-inverted") {
                        settings.testInverted = on
                        continue
                    }
                    if arg.hasPrefix("--") { throw UsageError("unknown option \(arg) (see scangate decode-image --help)") }
                    files.append(arg)
                }
            }
        } catch {
            return usageError(error.message)
        }
        if let corpus {
            let report = measureAccuracy(corpus: corpus, settings: settings)
            guard !report.groups.isEmpty else { return usageError("--corpus \(corpus): no corpus samples there") }
            print(report)
            if verbose { for line in report.failures { print(line) } }
            return ExitCode.success.rawValue
        }
        guard !files.isEmpty else { return usageError("decode-image needs at least one FILE (PNG, JPEG or PGM)") }
        let decoder: ImageDecoder
        do {
            decoder = try ImageDecoder(settings: settings)
        } catch {
            return usageError(error.message)
        }
        let out = FileDescriptor(rawValue: 1)
        var found = false
        var unreadable = false
        for path in files {
            let image: LumaImage
            do {
                image = try ImageFile.read(path: path)
            } catch {
                Logger.writeToStderr("scangate: " + Logger.escapeControls(error.message))
                unreadable = true
                continue
            }
            let symbols = decoder.decode(width: image.width, height: image.height, luma: image.pixels)
            if symbols.isEmpty {
                // stdout stays codes only; the file that held none is named on stderr.
                Logger.writeToStderr("scangate: \(Logger.escapeControls(path)): no code found")
            }
            for symbol in symbols {
                found = true
                var line: [UInt8] = verbose
                    ? Array("\(path): \(symbol.symbology.zbarName) [\(decoder.lastPass ?? "")]: ".utf8) : []
                line += symbol.data
                line.append(0x0A)
                _ = out.writeAll(line)
            }
        }
        if unreadable { return ExitCode.usage.rawValue }
        return found ? ExitCode.success.rawValue : ExitCode.nothingFound.rawValue
    }
}

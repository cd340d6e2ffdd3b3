import Core
import Images
import Platform
import Simulator

/// `scangate make-code TEXT`: draws a code in the terminal, or writes it to a PNG or PGM file.
enum MakeCodeCommand {
    static let help = """
        Usage: scangate make-code TEXT [--symbology NAME] [--ecc L|M|Q|H] [--scale N] [--out FILE.png|FILE.pgm]
               scangate make-code --data-file FILE [options]

        Draws a code for TEXT in the terminal (Unicode half blocks, quiet zone included), or writes an image.
          --symbology NAME   \(SymbolEncoder.supportedNames)
                             (default QRCode; older names such as qr, ean13 work too)
          --ecc L|M|Q|H      QR and Micro QR error correction level (default M; Micro QR: no H)
          --scale N          pixels per module in the image file, 1-64 (default 8)
          --bar-height N     1D codes: bar height in pixels in the image file (default 50 modules)
          --quiet N          quiet zone in modules (default 4 for QR; 2 for Micro QR, DataMatrix, Aztec,
                             PDF417; 12 for 1D codes)
          --out FILE         write FILE.png or FILE.pgm instead of drawing in the terminal
          --escapes          TEXT may hold C escapes: \(PayloadEscapes.allowed)
          --data-file FILE   take the payload bytes from FILE (binary-safe) instead of TEXT
        Exit: 0 done, 2 bad flag, payload or file.
        """

    struct Options {
        var text: String?
        var dataFile: String?
        var symbology: Symbology = .qr
        var ecc: QREncoder.ErrorCorrection = .M
        var scale = 8
        var barHeight: Int?
        var quiet: Int?
        var out: String?
        var escapes = false
    }

    static func run(_ arguments: [String]) -> Int32 {
        var o = Options()
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help":
                    print(help)
                    return 0
                case "--symbology":
                    let name = try args.value(arg, "a NAME (\(SymbolEncoder.supportedNames))")
                    guard let s = Symbology(name: name), SymbolEncoder.supported.contains(s) else {
                        throw UsageError("--symbology: '\(name)' cannot be drawn (allowed: \(SymbolEncoder.supportedNames))")
                    }
                    o.symbology = s
                case "--ecc":
                    let name = try args.value(arg, "L, M, Q or H")
                    guard let ecc = QREncoder.ErrorCorrection(name: name) else {
                        throw UsageError("--ecc: '\(name)' is not one of L, M, Q, H")
                    }
                    o.ecc = ecc
                case "--scale": o.scale = try args.number(arg, 1...64)
                case "--bar-height": o.barHeight = try args.number(arg, 1...4096)
                case "--quiet": o.quiet = try args.number(arg, 0...64)
                case "--out": o.out = try args.value(arg, "a FILE.png or FILE.pgm")
                case "--data-file": o.dataFile = try args.value(arg, "a FILE")
                case "--escapes": o.escapes = true
                default:
                    if arg.hasPrefix("--") { throw UsageError("unknown option \(arg) (see scangate make-code --help)") }
                    guard o.text == nil else { throw UsageError("make-code takes one TEXT (quote it); got also '\(arg)'") }
                    o.text = arg
                }
            }
            return try make(o)
        } catch {
            return usageError(error.message)
        }
    }

    static func make(_ o: Options) throws(UsageError) -> Int32 {
        let payload: [UInt8]
        switch (o.text, o.dataFile) {
        case (nil, nil): throw UsageError("make-code needs a TEXT or --data-file FILE (see scangate make-code --help)")
        case (.some, .some): throw UsageError("make-code takes a TEXT or --data-file FILE, not both")
        case (nil, .some(let file)): payload = try FileBytes.read(path: file, limit: .payload)
        case (.some(let text), nil):
            if o.escapes {
                do { payload = try PayloadEscapes.decode(text) } catch { throw UsageError("TEXT: \(error.description)") }
            } else {
                payload = Array(text.utf8)
            }
        }
        let bitmap: ModuleBitmap
        do {
            bitmap = try SymbolEncoder.encode(o.symbology, payload: payload, ecc: o.ecc)
        } catch {
            throw UsageError("make-code: \(error.description)")
        }
        let quiet = o.quiet ?? SymbolEncoder.defaultQuietZone(for: o.symbology)
        if let out = o.out {
            guard let format = ImageFile.writableFormat(forPath: out) else {
                throw UsageError("--out: '\(out)' must end in .png or .pgm")
            }
            let image = SymbolImage.render(bitmap, moduleSize: o.scale, barHeight: o.barHeight ?? 50 * o.scale,
                                           quietZone: quiet)
            try ImageFile.write(image, to: out, format: format)
            return ExitCode.success.rawValue
        }
        // Terminal: one column per module; 1D bars 16 pixel rows (8 lines) high.
        let image = SymbolImage.render(bitmap, moduleSize: 1, barHeight: 16, quietZone: quiet)
        let lines = TerminalArt.lines(image, ansiColours: isatty(1) == 1)
        _ = FileDescriptor(rawValue: 1).writeAll(Array((lines.joined(separator: "\n") + "\n").utf8))
        return ExitCode.success.rawValue
    }
}

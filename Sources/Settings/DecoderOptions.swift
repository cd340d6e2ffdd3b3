import Core

extension OptionTable {
    public static let decoder: [OptionSpec] = [
        OptionSpec("decoder", .decoder, .value(placeholder: "NAME"), default: "zxing",
                   help: "the library that reads frames: zxing (zxing-cpp: every format, about a tenth of zbar's CPU per frame) or zbar (QR and 1D codes only)",
                   apply: { s, v in s.decoder.engine = try ParseValue.choice(v, DecoderEngine.allCases.map { ($0.rawValue, $0) }) },
                   show: { $0.decoder.engine.rawValue }),
        OptionSpec("symbologies", .decoder, .value(placeholder: "LIST"), default: "QRCode",
                   help: "codes to read, comma-separated, or all: \(Symbology.cliNames) (older names such as qr, ean13, EAN-13 are accepted)",
                   apply: { s, v in
                       switch Symbology.set(named: ParseValue.list(v)) {
                       case .failure(let e):
                           throw OptionValueError("'\(e.name)' is not a symbology (allowed: all, or any of \(Symbology.cliNames))")
                       case .success(let set):
                           guard !set.isEmpty else { throw OptionValueError("is empty (allowed: all, or any of \(Symbology.cliNames))") }
                           s.decoder.symbologies = set
                       }
                   },
                   show: { s in
                       s.decoder.symbologies.count == Symbology.allCases.count ? "all"
                           : Symbology.allCases.filter { s.decoder.symbologies.contains($0) }.map(\.zxingName).joined(separator: ",")
                   }),
        OptionSpec("density", .decoder, .value(placeholder: "N"), default: "1",
                   help: "zbar: scan every Nth pixel row and column (1: all; 2 halves the cost, needs >= 3 px per module)",
                   apply: { s, v in s.decoder.density = try ParseValue.int(v, in: 1...8) },
                   show: { String($0.decoder.density) }),
        OptionSpec("invert-retry", .decoder, .flag, default: "true",
                   help: "zxing: when a frame holds no code, read it inverted too (light-on-dark codes: phones in dark mode)",
                   apply: { s, v in s.decoder.invertRetry = try ParseValue.bool(v) },
                   show: { String($0.decoder.invertRetry) }),
        OptionSpec("test-inverted", .decoder, .flag, default: "false",
                   help: "zbar: also read light-on-dark codes in every frame (doubles zbar's cost; zxing uses invert-retry)",
                   apply: { s, v in s.decoder.testInverted = try ParseValue.bool(v) },
                   show: { String($0.decoder.testInverted) }),
        OptionSpec("upca-as-ean13", .decoder, .flag, default: "false",
                   help: "report UPC-A as 13-digit EAN-13 instead of 12-digit UPC-A",
                   apply: { s, v in s.decoder.upcaAsEAN13 = try ParseValue.bool(v) },
                   show: { String($0.decoder.upcaAsEAN13) }),
        OptionSpec("idle-rescan-frames", .decoder, .value(placeholder: "N"), default: "30",
                   help: "skip decoding frames that did not change, but decode at least every Nth frame (0: decode every frame)",
                   apply: { s, v in s.decoder.idleRescanFrames = try ParseValue.int(v, in: 0...1000) },
                   show: { String($0.decoder.idleRescanFrames) }),
        OptionSpec("change-threshold", .decoder, .value(placeholder: "LEVELS"), default: "6",
                   help: "grey-level change of a 16x16 block that counts as a change (idle gating)",
                   apply: { s, v in s.decoder.changeThreshold = try ParseValue.int(v, in: 1...255) },
                   show: { String($0.decoder.changeThreshold) }),
        OptionSpec("upce-as-gtin13", .decoder, .flag, default: "false",
                   help: "report UPC-E as its 13-digit GTIN instead of 8 digits",
                   apply: { s, v in s.decoder.upceAsGTIN13 = try ParseValue.bool(v) },
                   show: { String($0.decoder.upceAsGTIN13) }),
        OptionSpec("qr-text-utf8", .decoder, .flag, default: "false",
                   help: "convert QR payloads to UTF-8 text (Shift_JIS or ISO-8859-1 when not UTF-8); off: bytes kept exactly",
                   apply: { s, v in s.decoder.qrTextAsUTF8 = try ParseValue.bool(v) },
                   show: { String($0.decoder.qrTextAsUTF8) }),
        OptionSpec("code39-full-ascii", .decoder, .flag, default: "false",
                   help: "decode Code 39 full-ASCII pairs ($A %B /C +D) when all pairs are valid",
                   apply: { s, v in s.decoder.code39FullASCII = try ParseValue.bool(v) },
                   show: { String($0.decoder.code39FullASCII) }),
        OptionSpec("ean-addons", .decoder, .flag, default: "false",
                   help: "zbar: read EAN-2/EAN-5 add-ons and append them to the EAN-13/UPC-A they follow",
                   apply: { s, v in s.decoder.eanAddOns = try ParseValue.bool(v) },
                   show: { String($0.decoder.eanAddOns) }),
    ]
}

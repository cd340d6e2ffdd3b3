import Core

extension OptionTable {
    public static let debounce: [OptionSpec] = [
        OptionSpec("hold-off-ms", .debounce, .value(placeholder: "MS"), default: "1500",
                   help: "a code is reported again only after it has been out of view this long",
                   apply: { s, v in s.debounce.holdOffMs = try ParseValue.double(v, in: 0...600_000) },
                   show: { ParseValue.format($0.debounce.holdOffMs) }),
        OptionSpec("confirm-frames-2d", .debounce, .value(placeholder: "N"), default: "1",
                   help: "frames in a row a QR code must be read before it is reported",
                   apply: { s, v in s.debounce.confirmations2D = try ParseValue.int(v, in: 1...30) },
                   show: { String($0.debounce.confirmations2D) }),
        OptionSpec("confirm-frames-1d", .debounce, .value(placeholder: "N"), default: "2",
                   help: "frames in a row a 1D barcode must be read before it is reported",
                   apply: { s, v in s.debounce.confirmations1D = try ParseValue.int(v, in: 1...30) },
                   show: { String($0.debounce.confirmations1D) }),
    ]
}

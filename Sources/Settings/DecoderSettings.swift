import Core

/// The library that reads the frames.
public enum DecoderEngine: String, CaseIterable, Sendable {
    /// zxing-cpp 1.4 (Debian libzxing-dev): every format, a fifth of zbar's CPU per frame.
    case zxing
    /// zbar 0.23: QR and the 1D codes only.
    case zbar
}

/// What the user chose for decoding (the `[decoder]` section).
public struct DecoderSettings: SettingsSection {
    /// Which library reads the frames (`decoder = zxing | zbar`).
    public var engine: DecoderEngine = .zxing
    public var symbologies: Set<Symbology> = [.qr]
    /// zbar x/y density: scan every Nth line (1 = every line).
    public var density: Int = 1
    /// zbar: also look for light-on-dark codes (phone screens in dark mode) in every frame.
    public var testInverted: Bool = false
    /// zxing: when a frame holds no code, read its inverted copy too (light-on-dark codes: phone
    /// screens in dark mode). Costs a second read on frames with no code only.
    public var invertRetry: Bool = true
    /// Report UPC-A as 13-digit EAN-13 (with the leading 0) instead of 12-digit UPC-A.
    public var upcaAsEAN13: Bool = false
    /// Idle gating: a frame that did not change meaningfully is not decoded again, but a full decode is
    /// forced every this many frames. 0 turns gating off (every frame is decoded).
    public var idleRescanFrames: Int = 30
    /// Grey-level change of a 16×16 block's mean or edge energy that counts as a change.
    public var changeThreshold: Int = 6
    /// Report UPC-E as its 13-digit GTIN (0 + the UPC-A it stands for) instead of 8 digits.
    public var upceAsGTIN13: Bool = false
    /// QR payloads converted to UTF-8 text (valid UTF-8 kept, else Shift_JIS, else ISO-8859-1).
    /// Off by default: the daemon keeps payload bytes exactly (binary QR preserved).
    public var qrTextAsUTF8: Bool = false
    /// Code 39 full-ASCII pairs ($A, %B, /C, +D) decoded to the characters they stand for, when every
    /// pair in the payload is a valid one.
    public var code39FullASCII: Bool = false
    /// EAN-2/EAN-5 add-ons read and appended to the EAN-13/UPC-A/UPC-E/EAN-8 they follow (a book's price,
    /// a magazine's issue). Off by default: an add-on changes the payload.
    public var eanAddOns: Bool = false
    public init() {}

    /// The combinations the options alone cannot refuse: zbar does not read Micro QR, DataMatrix, Aztec
    /// or PDF417 (`all` under zbar means all that zbar reads); the EAN add-ons are read by zbar only.
    public func validate() throws(UsageError) {
        if engine == .zxing, eanAddOns {
            throw UsageError("ean-addons: decoder zxing does not read EAN-2/EAN-5 add-ons (use decoder = zbar with ean-addons)")
        }
        let all = symbologies.count == Symbology.allCases.count
        let unreadable = Symbology.allCases.filter { symbologies.contains($0) && $0.needsZXing }
        guard engine == .zbar, !all, !unreadable.isEmpty else { return }
        throw UsageError("symbologies: decoder zbar cannot read \(unreadable.map(\.zxingName).joined(separator: ", ")) (use decoder = zxing, or leave them out)")
    }

    /// The symbologies zbar is asked for: all of them but those only zxing reads.
    public var zbarSymbologies: Set<Symbology> { symbologies.filter { !$0.needsZXing } }
}

extension RunSettings {
    public var decoder: DecoderSettings {
        get { self[DecoderSettings.self] }
        set { self[DecoderSettings.self] = newValue }
    }
}

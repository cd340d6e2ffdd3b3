import Images

/// One scenario code drawn once, with its own effects (contrast, inversion, rotation, blur) applied:
/// the per-frame work is only to copy it into place.
struct CodePatch {
    let image: LumaImage

    /// The size `init` draws the code at (quiet zone and rotation included), from its module bitmap alone:
    /// the scenario parser checks fit and memory with it before any pixel is drawn.
    static func size(of code: Scenario.Code) throws(SymbolError) -> (width: Int, height: Int) {
        let bitmap = try SymbolEncoder.encode(code.symbology, payload: code.payload, ecc: code.ecc, segmented: code.segmented)
        let (width, height) = SymbolImage.size(of: bitmap, moduleSize: code.moduleSize,
                                               barHeight: code.barHeight ?? 40 * code.moduleSize,
                                               quietZone: code.quietZone ?? SymbolEncoder.defaultQuietZone(for: code.symbology))
        return ImageEffects.rotatedSize(width: width, height: height, degrees: code.rotation)
    }

    init(_ code: Scenario.Code, background: UInt8) throws(SymbolError) {
        let bitmap = try SymbolEncoder.encode(code.symbology, payload: code.payload, ecc: code.ecc, segmented: code.segmented)
        let quiet = code.quietZone ?? SymbolEncoder.defaultQuietZone(for: code.symbology)
        let halfRange = 110 * code.contrast
        var dark = UInt8((128 - halfRange).rounded()), light = UInt8((128 + halfRange).rounded())
        if code.inverted { swap(&dark, &light) }
        let pixelCount = (bitmap.width + 2 * quiet) * code.moduleSize * max(bitmap.height * code.moduleSize, code.barHeight ?? 0)
        guard pixelCount <= 1 << 26 else { throw SymbolError("the code is far too large (lower module or height)") }
        var image = SymbolImage.render(bitmap, moduleSize: code.moduleSize,
                                       barHeight: code.barHeight ?? 40 * code.moduleSize,
                                       quietZone: quiet, dark: dark, light: light)
        if code.rotation != 0 { image = ImageEffects.rotate(image, degrees: code.rotation, fill: background) }
        if code.blur > 0 { image = ImageEffects.boxBlur(image, radius: code.blur) }
        self.image = image
    }
}

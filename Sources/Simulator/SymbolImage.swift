import Images

/// Draws a module bitmap as pixels: a light box (the quiet zone) with dark modules.
public enum SymbolImage {
    /// - Parameters:
    ///   - moduleSize: pixels per module.
    ///   - barHeight: pixels of bar height for linear codes (ignored for 2D codes).
    ///   - quietZone: modules of light margin left and right (and above/below a 2D code);
    ///     linear codes get half of it above and below.
    public static func render(_ bitmap: ModuleBitmap, moduleSize: Int, barHeight: Int, quietZone: Int,
                              dark: UInt8 = 0, light: UInt8 = 255) -> LumaImage {
        let m = max(1, moduleSize)
        let marginX = quietZone * m
        let marginY = bitmap.isLinear ? max(m, quietZone * m / 2) : quietZone * m
        let symbolHeight = bitmap.isLinear ? max(1, barHeight) : bitmap.height * m
        let (width, height) = size(of: bitmap, moduleSize: moduleSize, barHeight: barHeight, quietZone: quietZone)
        var pixels = [UInt8](repeating: light, count: width * height)
        for y in 0..<symbolHeight {
            let my = bitmap.isLinear ? 0 : y / m
            let row = (marginY + y) * width + marginX
            for mx in 0..<bitmap.width where bitmap[mx, my] {
                for dx in 0..<m { pixels[row + mx * m + dx] = dark }
            }
        }
        return LumaImage(width: width, height: height, pixels: pixels)
    }

    /// The size `render` draws with these parameters.
    public static func size(of bitmap: ModuleBitmap, moduleSize: Int, barHeight: Int, quietZone: Int) -> (width: Int, height: Int) {
        let m = max(1, moduleSize)
        let marginX = quietZone * m
        let marginY = bitmap.isLinear ? max(m, quietZone * m / 2) : quietZone * m
        let symbolHeight = bitmap.isLinear ? max(1, barHeight) : bitmap.height * m
        return (bitmap.width * m + 2 * marginX, symbolHeight + 2 * marginY)
    }
}

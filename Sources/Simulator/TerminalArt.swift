import Images

/// Draws a code in a terminal with Unicode half blocks: each character cell holds two pixel rows.
/// On a terminal, the code is drawn black on an explicit white background so it scans on dark and light
/// themes alike; elsewhere (a pipe, a file) dark pixels are plain block characters.
public enum TerminalArt {
    /// Lines (without newlines) for `image` at one pixel per module; pixels below 128 are dark.
    public static func lines(_ image: LumaImage, ansiColours: Bool) -> [String] {
        var lines: [String] = []
        var y = 0
        while y < image.height {
            var line = ansiColours ? "\u{1B}[30;107m" : ""
            for x in 0..<image.width {
                let top = image.pixels[y * image.width + x] < 128
                let bottom = y + 1 < image.height && image.pixels[(y + 1) * image.width + x] < 128
                switch (top, bottom) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            if ansiColours { line += "\u{1B}[0m" }
            lines.append(line)
            y += 2
        }
        return lines
    }
}

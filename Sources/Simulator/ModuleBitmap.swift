/// A symbol as modules (dark or light), without its quiet zone. Linear (1D) codes have height 1.
public struct ModuleBitmap: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public let dark: [Bool]

    public init(width: Int, height: Int, dark: [Bool]) {
        precondition(dark.count == width * height, "modules must be width*height")
        self.width = width
        self.height = height
        self.dark = dark
    }

    /// A one-row bitmap for a linear code.
    public init(bars: [Bool]) { self.init(width: bars.count, height: 1, dark: bars) }

    public var isLinear: Bool { height == 1 }

    public subscript(x: Int, y: Int) -> Bool { dark[y * width + x] }

    /// Bars from element widths, starting with a bar: "211214" → ▮▮ ▮ ▮▮ ▮▮▮▮ (bar, space, bar, ...).
    static func bars(fromWidths widths: [Int], startDark: Bool = true) -> [Bool] {
        var out: [Bool] = []
        var dark = startDark
        for w in widths {
            out.append(contentsOf: repeatElement(dark, count: w))
            dark.toggle()
        }
        return out
    }
}

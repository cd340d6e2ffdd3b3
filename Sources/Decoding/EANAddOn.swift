import Core

/// EAN-2/EAN-5 add-ons, which zbar reports as symbols of their own, joined to the EAN/UPC symbol
/// they belong to: the add-on must lie right of the main symbol, within one main-symbol width of it
/// (zbar locates a 1D symbol by the scan-line points where it decoded, so neither box is the printed
/// extent; on the corpus the add-on's point lay 0.5-0.6 widths to the right), and overlap it vertically. The nearest such
/// EAN-13/UPC-A gets the add-on's digits appended; an add-on without one is dropped. UPC-E and EAN-8
/// are left alone: on the corpus every add-on zbar reported next to them was a false one.
enum EANAddOn {
    static let mainSymbologies: Set<Symbology> = [.ean13, .upca, .isbn13]

    static func attach(_ addOns: [(data: [UInt8], bounds: Rect)], to symbols: inout [DecodedSymbol]) {
        for addOn in addOns {
            let a = addOn.bounds
            var best: (index: Int, distance: Int)?
            for (i, s) in symbols.enumerated() where mainSymbologies.contains(s.symbology) {
                let m = s.bounds
                let gap = a.x - (m.x + m.w)
                guard a.x > m.x + m.w / 2, gap <= m.w, a.y <= m.y + m.h, m.y <= a.y + a.h,
                      // Not already carrying an add-on.
                      s.data.count <= 13 else { continue }
                if gap < (best?.distance ?? Int.max) { best = (i, gap) }
            }
            if let best {
                symbols[best.index].data += addOn.data
                let m = symbols[best.index].bounds
                let right = max(m.x + m.w, a.x + a.w), bottom = max(m.y + m.h, a.y + a.h)
                let x = min(m.x, a.x), y = min(m.y, a.y)
                symbols[best.index].bounds = Rect(x: x, y: y, w: right - x, h: bottom - y)
            }
        }
    }
}

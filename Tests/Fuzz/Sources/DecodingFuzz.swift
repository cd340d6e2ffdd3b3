import Core
import Decoding
import StillImages

/// The flattened-label pass of decode-image on arbitrary small images.
enum DecodingFuzz {
    /// Input: width byte, height byte (16...64 each), then the pixels (repeated to fill the image).
    /// A flattened label has a sane size and its pixels; its corners and centre map back inside the
    /// photo, since the patch only blends points of the label's own outline.
    @Sendable static func labelUnwarp(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let width = 16 + Int(input.byte()) % 49, height = 16 + Int(input.byte()) % 49
        let rest = input.rest()
        guard !rest.isEmpty else { return }
        let luma = (0..<(width * height)).map { rest[$0 % rest.count] }
        guard let label = LabelUnwarp.flatten(width: width, height: height, luma: luma) else { return }
        require(label.width >= 16 && label.height >= 16, "flattened to \(label.width)x\(label.height)")
        require(max(label.width, label.height) <= LabelUnwarp.maxSide + 1, "flattened beyond the size cap")
        require(label.luma.count == label.width * label.height, "pixel count does not match the size")
        for r in [Rect(x: 0, y: 0, w: label.width - 1, h: label.height - 1),
                  Rect(x: label.width / 3, y: label.height / 3, w: 1, h: 1)] {
            let back = label.mapBack(r)
            require(back.x >= 0 && back.y >= 0 && back.x + back.w <= width && back.y + back.h <= height,
                    "\(r) mapped back to \(back), outside the \(width)x\(height) photo")
        }
    }
}

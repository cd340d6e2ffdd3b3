import Core

/// Netpbm graymaps: P5 (binary) and P2 (ASCII), maxval 1…65535, scaled to 8 bits. Writes P5, maxval 255.
public enum PGMCodec {
    /// True when `bytes` start with a PGM magic number.
    public static func sniff(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == UInt8(ascii: "P") && (bytes[1] == UInt8(ascii: "5") || bytes[1] == UInt8(ascii: "2"))
    }

    /// Decodes a PGM file held in `bytes`; `name` is used in error messages.
    public static func decode(_ bytes: [UInt8], name: String) throws(UsageError) -> LumaImage {
        guard sniff(bytes) else { throw UsageError("cannot read \(name): not a PGM file") }
        let ascii = bytes[1] == UInt8(ascii: "2")
        var cursor = Cursor(bytes: bytes, position: 2)
        guard let width = cursor.headerNumber(), let height = cursor.headerNumber(), let maxval = cursor.headerNumber() else {
            throw UsageError("cannot read \(name): bad PGM header (want width, height and maxval)")
        }
        guard ImageLimits.allows(width: width, height: height) else {
            throw ImageLimits.sizeError(name, "PGM", width, height)
        }
        guard (1...65535).contains(maxval) else {
            throw UsageError("cannot read \(name): PGM maxval \(maxval) is not in 1...65535")
        }
        let count = width * height
        var pixels = [UInt8](repeating: 0, count: count)
        func scale(_ v: Int) -> UInt8 {
            maxval == 255 ? UInt8(min(v, 255)) : UInt8((min(v, maxval) * 255 + maxval / 2) / maxval)
        }
        if ascii {
            for i in 0..<count {
                guard let v = cursor.headerNumber() else {
                    throw UsageError("cannot read \(name): truncated PGM (\(i) of \(count) pixels)")
                }
                pixels[i] = scale(v)
            }
        } else {
            // Exactly one whitespace byte separates maxval from the raster.
            let start = cursor.position + 1
            let sampleBytes = maxval > 255 ? 2 : 1
            guard start + count * sampleBytes <= bytes.count else {
                let got = max(0, bytes.count - start) / sampleBytes
                throw UsageError("cannot read \(name): truncated PGM (\(got) of \(count) pixels)")
            }
            if sampleBytes == 1 {
                for i in 0..<count { pixels[i] = scale(Int(bytes[start + i])) }
            } else {
                for i in 0..<count {
                    pixels[i] = scale(Int(bytes[start + 2 * i]) << 8 | Int(bytes[start + 2 * i + 1]))
                }
            }
        }
        return LumaImage(width: width, height: height, pixels: pixels)
    }

    /// A binary P5 file, maxval 255.
    public static func encode(_ image: LumaImage) -> [UInt8] {
        var out = Array("P5\n\(image.width) \(image.height)\n255\n".utf8)
        out.append(contentsOf: image.pixels)
        return out
    }

    /// Reads decimal numbers separated by whitespace and `#` comments.
    private struct Cursor {
        let bytes: [UInt8]
        var position: Int

        mutating func headerNumber() -> Int? {
            while position < bytes.count {
                let b = bytes[position]
                if b == UInt8(ascii: "#") {
                    while position < bytes.count && bytes[position] != 0x0A && bytes[position] != 0x0D { position += 1 }
                } else if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D || b == 0x0B || b == 0x0C {
                    position += 1
                } else {
                    break
                }
            }
            var value = 0
            var digits = 0
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                value = value * 10 + Int(bytes[position] - 0x30)
                digits += 1
                position += 1
                if digits > 9 { return nil }
            }
            return digits > 0 ? value : nil
        }
    }
}

import CZXingShim
import Core

/// The typed face of `zxshim_read` (Sources/CZXingShim): one call, its return code checked, the C
/// array copied into Swift values and freed. Holds no state of its own.
struct ZXingReader {
    /// One symbol as zxing-cpp reported it.
    struct Found {
        var format: UInt32
        var bytes: [UInt8]
        /// zxing's text (UTF-8 by ECI or guessed charset), when asked for with `ZXSHIM_TEXT`.
        var text: [UInt8]?
        var corners: [Point]
        var eci: Int?
        var contentType: Int32
    }

    /// zxing threw (caught in the shim) or memory ran out; or it hit one of its assertions, which the
    /// shim turned into an abandoned read (`assertion`: which one).
    struct Failure: Error, CustomStringConvertible {
        var assertion: String? = nil
        var description: String {
            assertion.map { "zxing-cpp hit an assertion (\($0)); the read was abandoned" }
                ?? "zxing-cpp failed to read the image (it threw, or memory ran out)"
        }
    }

    let formats: UInt32
    let flags: UInt32

    /// Every symbol of `formats` in the `width` x `height` luma image. An image that does not hold
    /// `width * height` bytes, or no format asked for, finds nothing.
    func read(width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) throws(Failure) -> [Found] {
        guard width > 0, height > 0, width <= Int(Int32.max), height <= Int(Int32.max),
              luma.count >= width * height, formats != 0, let base = luma.baseAddress else { return [] }
        var raw: UnsafeMutablePointer<zxshim_symbol>?
        let count = zxshim_read(base, Int32(width), Int32(height), formats, flags, &raw)
        if count == ZXSHIM_ASSERTED { throw Failure(assertion: String(cString: zxshim_last_assertion())) }
        guard count >= 0 else { throw Failure() }
        guard count > 0, let raw else { return [] }
        defer { zxshim_free(raw, count) }
        return (0..<Int(count)).map { i in
            let s = raw[i]
            return Found(format: s.format, bytes: ZXingReader.copy(s.data, s.length),
                         text: s.text.map { ZXingReader.copy($0, s.text_length) },
                         corners: withUnsafeBytes(of: s.corners) { raw in
                             let c = raw.bindMemory(to: Int32.self)
                             return (0..<4).map { Point(x: Int(c[2 * $0]), y: Int(c[2 * $0 + 1])) }
                         },
                         eci: s.eci >= 0 ? Int(s.eci) : nil, contentType: s.content_type)
        }
    }

    private static func copy(_ pointer: UnsafeMutablePointer<UInt8>?, _ count: Int) -> [UInt8] {
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    /// ZXing::ContentType::GS1.
    static let contentGS1: Int32 = 3
}

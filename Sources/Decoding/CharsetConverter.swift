#if canImport(Glibc)
import Glibc
#endif
import Platform

/// Owns one iconv conversion descriptor (iconv_open/iconv/iconv_close from the C library).
/// Not thread-safe: iconv keeps shift state, so each decoder owns its own converters.
final class CharsetConverter {
    private let descriptor: UnsafeMutableRawPointer
    let from: String

    /// Fails with the errno of iconv_open (EINVAL: the C library does not know the charset).
    init(from: String, to: String = "UTF-8") throws(SystemError) {
        guard let cd = iconv_open(to, from), cd != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw SystemError("iconv_open", "\(from) to \(to)", Errno.current)
        }
        descriptor = cd
        self.from = from
    }

    deinit { iconv_close(descriptor) }

    /// The whole input converted, or nil when any byte sequence is not valid in `from`
    /// (EILSEQ, or EINVAL for a truncated multi-byte sequence at the end).
    func convert(_ input: [UInt8]) -> [UInt8]? {
        // Reset the shift state left by an earlier call.
        _ = iconv(descriptor, nil, nil, nil, nil)
        var output = [UInt8](repeating: 0, count: input.count * 4 + 16)
        var inputCopy = input
        let produced: Int? = inputCopy.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer -> Int? in
                guard let outBase = outBuffer.baseAddress else { return nil }
                var inPointer: UnsafeMutablePointer<CChar>? = inBuffer.baseAddress.map {
                    UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self)
                }
                var outPointer: UnsafeMutablePointer<CChar>? =
                    UnsafeMutableRawPointer(outBase).assumingMemoryBound(to: CChar.self)
                var inLeft = inBuffer.count
                var outLeft = outBuffer.count
                // (size_t)-1 with errno EILSEQ/EINVAL: invalid input; E2BIG cannot happen (4 bytes of
                // UTF-8 per input byte is enough for every charset used here).
                if iconv(descriptor, &inPointer, &inLeft, &outPointer, &outLeft) == -1 {
                    return nil
                }
                guard inLeft == 0 else { return nil }
                return outBuffer.count - outLeft
            }
        }
        guard let produced else { return nil }
        output.removeSubrange(produced...)
        return output
    }
}

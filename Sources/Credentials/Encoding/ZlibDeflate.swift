import CZlib

/// zlib's compress2 (Debian libz) over one whole buffer, in the zlib format that Token Status Lists carry:
/// what `scangate bench` and the tests issue lists with. Every return code is checked.
public enum ZlibDeflate {
    /// The zlib stream of `input` at `level` (0-9; 9: smallest).
    public static func compress(_ input: [UInt8], level: Int32 = 9) throws(ZlibError) -> [UInt8] {
        guard input.count <= Int(UInt32.max) else { throw ZlibError("compress2", code: 0, "the data is too large") }
        var length = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let code = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { source in
                compress2(out.baseAddress, &length, source.baseAddress, uLong(source.count), level)
            }
        }
        guard code == Z_OK else { throw ZlibError("compress2", code: code, "cannot compress \(input.count) bytes at level \(level)") }
        return Array(output.prefix(Int(length)))
    }
}

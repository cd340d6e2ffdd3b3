import CZlib

/// Why zlib would not inflate a buffer: the call, its return code and zlib's own message, or the limit hit.
public struct ZlibError: Error, Equatable, Sendable, CustomStringConvertible {
    /// "inflateInit2", "inflate", "inflateEnd", or "limit" when the output would pass `maxOutput`.
    public let operation: String
    /// zlib's return code (Z_DATA_ERROR is -3, ...); 0 for the checks made here.
    public let code: Int32
    public let message: String

    public init(_ operation: String, code: Int32, _ message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String {
        code == 0 ? message : "\(operation) returned \(ZlibInflate.name(code)): \(message)"
    }
}

/// zlib's inflate (Debian libz) over one whole buffer in the zlib format (RFC 1950 around RFC 1951
/// DEFLATE), as Token Status Lists carry it. Bounded: output is produced at most `maxOutput + 1` bytes
/// at a time and refused past `maxOutput`, so a small input that inflates to gigabytes (a zip bomb) costs
/// no more memory than the limit. The stream must end exactly at the end of the input: a truncated
/// stream, trailing bytes, a preset dictionary or a bad checksum are refused. Every return code is checked.
public enum ZlibInflate {
    /// zlib format only (windowBits 15: no gzip header, no raw deflate).
    static let windowBits: Int32 = 15
    static let chunkBytes = 64 * 1024

    public static func inflate(_ input: [UInt8], maxOutput: Int) throws(ZlibError) -> [UInt8] {
        guard !input.isEmpty else { throw ZlibError("inflate", code: 0, "the compressed data is empty") }
        guard input.count <= Int(UInt32.max) else { throw ZlibError("inflate", code: 0, "the compressed data is too large") }
        let stream = InflateStream()
        try stream.start()
        var output: [UInt8] = []
        let result: Result<Void, ZlibError> = input.withUnsafeBufferPointer { source in
            stream.setInput(source)
            var chunk = [UInt8](repeating: 0, count: min(chunkBytes, maxOutput + 1))
            while true {
                // Never ask for more than one byte past the limit: that byte is what says "too large".
                let room = min(chunk.count, maxOutput + 1 - output.count)
                let (code, produced) = chunk.withUnsafeMutableBufferPointer { stream.step(into: $0, room: room) }
                if produced > 0 {
                    guard output.count + produced <= maxOutput else {
                        return .failure(ZlibError("limit", code: 0, "inflates to more than \(maxOutput) bytes"))
                    }
                    output += chunk[0..<produced]
                }
                switch code {
                case Z_STREAM_END:
                    guard stream.remainingInput == 0 else {
                        return .failure(ZlibError("inflate", code: 0, "\(stream.remainingInput) bytes follow the end of the zlib stream"))
                    }
                    return .success(())
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.remainingInput == 0:
                    return .failure(ZlibError("inflate", code: code, "the zlib stream is truncated"))
                case Z_BUF_ERROR:
                    // No progress with input left and room given: only when room is 0, which the limit check ends first.
                    return .failure(ZlibError("inflate", code: code, "no progress"))
                case Z_NEED_DICT:
                    return .failure(ZlibError("inflate", code: code, "the stream needs a preset dictionary, which a status list never has"))
                default:
                    return .failure(ZlibError("inflate", code: code, stream.message))
                }
            }
        }
        try stream.end()
        try result.get()
        return output
    }

    /// Z_DATA_ERROR and its kin by name, for messages.
    static func name(_ code: Int32) -> String {
        switch code {
        case Z_OK: return "Z_OK"
        case Z_STREAM_END: return "Z_STREAM_END"
        case Z_NEED_DICT: return "Z_NEED_DICT"
        case Z_ERRNO: return "Z_ERRNO"
        case Z_STREAM_ERROR: return "Z_STREAM_ERROR"
        case Z_DATA_ERROR: return "Z_DATA_ERROR"
        case Z_MEM_ERROR: return "Z_MEM_ERROR"
        case Z_BUF_ERROR: return "Z_BUF_ERROR"
        case Z_VERSION_ERROR: return "Z_VERSION_ERROR"
        default: return String(code)
        }
    }
}

/// One z_stream, owned here: `start` (inflateInit2_), `step` (inflate), `end` (inflateEnd, also on
/// deinit when a throw skipped it). The input and output pointers are set only inside the caller's
/// `withUnsafe...` scopes.
private final class InflateStream {
    private var stream = z_stream()
    private var started = false

    func start() throws(ZlibError) {
        let code = inflateInit2_(&stream, ZlibInflate.windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard code == Z_OK else { throw ZlibError("inflateInit2", code: code, message) }
        started = true
    }

    func setInput(_ source: UnsafeBufferPointer<UInt8>) {
        stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
        stream.avail_in = uInt(source.count)
    }

    var remainingInput: Int { Int(stream.avail_in) }

    /// One inflate call into the first `room` bytes of `out`; returns zlib's code and the bytes written.
    func step(into out: UnsafeMutableBufferPointer<UInt8>, room: Int) -> (Int32, Int) {
        stream.next_out = out.baseAddress
        stream.avail_out = uInt(room)
        let code = CZlib.inflate(&stream, Z_NO_FLUSH)
        let produced = room - Int(stream.avail_out)
        stream.next_out = nil
        stream.avail_out = 0
        return (code, produced)
    }

    var message: String {
        guard let text = stream.msg else { return "no message from zlib" }
        return String(cString: text)
    }

    func end() throws(ZlibError) {
        guard started else { return }
        started = false
        stream.next_in = nil
        stream.avail_in = 0
        let code = inflateEnd(&stream)
        guard code == Z_OK else { throw ZlibError("inflateEnd", code: code, "the stream state was inconsistent") }
    }

    deinit {
        if started { _ = inflateEnd(&stream) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Sequential reads of a file through a small buffer: lines and exact-length blocks. Owns the descriptor
/// (closed by `close()` or when the reader goes away). Errors name the file.
final class BufferedFileReader {
    enum Line { case line([UInt8]), endOfFile, unterminated, tooLong }

    let path: String
    private let file: OwnedFileDescriptor
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0

    init(path: String) throws(UsageError) {
        self.path = path
        switch FileDescriptor.open(path, O_RDONLY) {
        case .success(let fd): file = OwnedFileDescriptor(fd)
        case .failure(let e): throw UsageError("cannot read \(path): \(e)")
        }
    }

    /// One line without its `\n`.
    func readLine(limit: Int) throws(UsageError) -> Line {
        var line: [UInt8] = []
        while true {
            if start == end {
                guard try refill() else { return line.isEmpty ? .endOfFile : .unterminated }
            }
            while start < end {
                let b = buffer[start]
                start += 1
                if b == 0x0A { return .line(line) }
                line.append(b)
                if line.count > limit { return .tooLong }
            }
        }
    }

    /// Fills the first `count` bytes of `array`; returns the bytes read (fewer only at the end of the file).
    func read(into array: inout [UInt8], count: Int) throws(UsageError) -> Int {
        precondition(count <= array.count)
        let result: Result<Int, Errno> = array.withUnsafeMutableBytes { destination in
            var filled = min(end - start, count)
            if filled > 0 {
                buffer.withUnsafeBytes { src in
                    destination.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: filled)
                }
                start += filled
            }
            while filled < count {
                switch file.fd.read(into: UnsafeMutableRawBufferPointer(rebasing: destination[filled..<count])) {
                case .success(0): return .success(filled)
                case .success(let n): filled += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(filled)
        }
        switch result {
        case .success(let n): return n
        case .failure(let e): throw UsageError("cannot read \(path): \(e)")
        }
    }

    /// Moves to byte `offset` of the file.
    func seek(to offset: Int) throws(UsageError) {
        if lseek(file.fd.rawValue, off_t(offset), SEEK_SET) < 0 {
            throw UsageError("cannot seek in \(path): \(Errno.current)")
        }
        start = 0
        end = 0
    }

    func close() { file.close() }

    private func refill() throws(UsageError) -> Bool {
        let result = buffer.withUnsafeMutableBytes { file.fd.read(into: $0) }
        switch result {
        case .success(0): return false
        case .success(let n): start = 0; end = n; return true
        case .failure(let e): throw UsageError("cannot read \(path): \(e)")
        }
    }
}

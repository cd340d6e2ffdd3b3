#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// Sequential reads of a file through a small buffer: lines and exact-length blocks. The file is a
/// `BoundedFile` (a regular file within `limit`, opened without blocking; see there). Owns it (closed by
/// `close()` or when the reader goes away). Errors name the file.
final class BufferedFileReader {
    enum Line { case line([UInt8]), endOfFile, unterminated, tooLong }

    let path: String
    private let file: BoundedFile
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0

    init(path: String, limit: FileSizeLimit) throws(UsageError) {
        self.path = path
        do {
            file = try BoundedFile.open(path, limit: limit)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// One line without its `\n`, of at most `limit` bytes (a longer one is `.tooLong`, read no further).
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
        let result: Result<Int, BoundedFileError> = array.withUnsafeMutableBytes { destination in
            var filled = min(end - start, count)
            if filled > 0 {
                buffer.withUnsafeBytes { src in
                    destination.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: filled)
                }
                start += filled
            }
            while filled < count {
                do throws(BoundedFileError) {
                    let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: destination[filled..<count]))
                    if n == 0 { return .success(filled) }
                    filled += n
                } catch {
                    return .failure(error)
                }
            }
            return .success(filled)
        }
        switch result {
        case .success(let n): return n
        case .failure(let e): throw UsageError(e.description)
        }
    }

    /// Reads and drops `count` bytes through the small buffer (no allocation of `count` bytes);
    /// returns the bytes skipped (fewer only at the end of the file).
    func skip(count: Int) throws(UsageError) -> Int {
        var skipped = 0
        while skipped < count {
            if start == end {
                guard try refill() else { return skipped }
            }
            let n = min(end - start, count - skipped)
            start += n
            skipped += n
        }
        return skipped
    }

    /// Moves to byte `offset` of the file.
    func seek(to offset: Int) throws(UsageError) {
        do {
            try file.seek(to: Int64(offset))
        } catch {
            throw UsageError(error.description)
        }
        start = 0
        end = 0
    }

    func close() { file.close() }

    private func refill() throws(UsageError) -> Bool {
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(BoundedFileError) in try file.read(into: raw) }
        }
        switch result {
        case .success(0): return false
        case .success(let n): start = 0; end = n; return true
        case .failure(let e): throw UsageError(e.description)
        }
    }
}

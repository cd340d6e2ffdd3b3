#if canImport(Glibc)
import Glibc
#endif
import CShim
import Core
@testable import Decoding
import Images
import XCTest
import StillImages

/// zbar's assertion reports (fprintf to stdio's stderr) reach the logger at debug level, rate-limited;
/// other writes to stdio's stderr still reach fd 2 unchanged.
final class LibraryStderrTests: XCTestCase {
    static let corpusMissing = "real-photo corpus not found at ../shared/corpus (qrcode-2/#142.jpg makes zbar's DataBar decoder print)"

    /// The corpus photo on which zbar's DataBar decoder prints `Assertion "seg->finder >= 0" failed`.
    static func assertionPhoto() -> String? {
        AccuracyTests.corpusPath().map { $0 + "/samples/qrcode-2/#142.jpg" }
    }

    private static let report = Array("WARNING: decoder/databar.c:1265: _zbar_decode_databar: Assertion \"seg->finder >= 0\" failed.\n\ti=22 f=-1(100) part=0\n".utf8)

    func testAZbarReportBecomesOneLineAndOtherTextPassesThrough() {
        var continuation = false
        XCTAssertEqual(LibraryStderr.classify(Self.report, continuation: &continuation),
                       .init(report: "WARNING: decoder/databar.c:1265: _zbar_decode_databar: Assertion \"seg->finder >= 0\" failed. i=22 f=-1(100) part=0",
                             passthrough: []))
        XCTAssertFalse(continuation)
        let other = Array("Fatal error: something else\n".utf8)
        XCTAssertEqual(LibraryStderr.classify(other, continuation: &continuation), .init(report: nil, passthrough: other))
        // A warning that is not zassert's passes through too.
        let warning = Array("WARNING: low disk space\n".utf8)
        XCTAssertEqual(LibraryStderr.classify(warning, continuation: &continuation), .init(report: nil, passthrough: warning))
    }

    func testAReportSplitOverTwoWritesStaysOutOfStderr() {
        var continuation = false
        let first = Array("WARNING: decoder/databar.c:1265: f: Assertion \"x\" failed.\n\t".utf8)
        XCTAssertEqual(LibraryStderr.classify(first, continuation: &continuation).passthrough, [])
        XCTAssertTrue(continuation)
        let second = LibraryStderr.classify(Array("i=3 part=1\nnext line\n".utf8), continuation: &continuation)
        XCTAssertEqual(second, .init(report: "i=3 part=1", passthrough: Array("next line\n".utf8)))
        XCTAssertFalse(continuation)
    }

    func testAReportIsCutToItsBound() {
        var continuation = false
        let long = Array("WARNING: a: Assertion \"b\" failed.\n\t".utf8) + [UInt8](repeating: 0x41, count: 100_000) + [0x0A]
        let routed = LibraryStderr.classify(long, continuation: &continuation)
        XCTAssertEqual(routed.report?.utf8.count, LibraryStderr.maximumReportBytes)
        XCTAssertEqual(routed.passthrough, [])
    }

    /// The real thing, in this process: zbar decoding the photo prints through stdio's stderr, which is
    /// routed; the logger gets one debug line for its several reports (rate limit), fd 2 gets nothing from
    /// zbar, and a plain stdio write still reaches fd 2.
    func testZbarDecodingThePhotoLogsAtDebugAndWritesNothingToFd2() throws {
        let photo = try XCTUnwrap(Self.assertionPhoto(), Self.corpusMissing)
        let image = try ImageFile.read(path: photo)
        var settings = imageDecoderDefaults()
        settings.symbologies = Set(Symbology.allCases)
        let decoder = try ImageDecoder(settings: settings)
        XCTAssertTrue(LibraryStderr.shared.isInstalled)
        let lines = PosixMutex<[String]>([])
        let logger = Logger(level: .debug, repeatInterval: 3600, sink: { line in lines.withLock { $0.append(line) } })
        LibraryStderr.shared.route(to: logger)
        defer { LibraryStderr.shared.route(to: Logger(level: .info)) }
        let before = LibraryStderr.shared.reportCount

        let (fd2, symbols) = try capturingDescriptor2 { () -> [DecodedSymbol] in
            let symbols = decoder.decode(width: image.width, height: image.height, luma: image.pixels)
            _ = shim_stderr_print("a plain stdio line\n")
            return symbols
        }
        XCTAssertTrue(symbols.contains { $0.data.starts(with: Array("vmess://".utf8)) })
        XCTAssertEqual(fd2, "a plain stdio line\n")
        let reports = LibraryStderr.shared.reportCount - before
        XCTAssertGreaterThanOrEqual(reports, 2, "zbar printed no assertion report on this photo")
        let logged = lines.withLock { $0 }
        XCTAssertEqual(logged.count, 1, "\(logged)")
        let line = try XCTUnwrap(logged.first)
        XCTAssertTrue(line.hasPrefix("<7>zbar: WARNING: decoder/databar.c:"), line)
        XCTAssertTrue(line.contains("Assertion \"seg->finder >= 0\" failed. i="), line)
        XCTAssertFalse(line.contains("\\x09"), line)

        // At info level (the daemon's default) nothing is written at all.
        let quiet = PosixMutex<[String]>([])
        LibraryStderr.shared.route(to: Logger(level: .info, sink: { line in quiet.withLock { $0.append(line) } }))
        let (fd2Again, _) = try capturingDescriptor2 { decoder.decode(width: image.width, height: image.height, luma: image.pixels) }
        XCTAssertEqual(fd2Again, "")
        XCTAssertEqual(quiet.withLock { $0 }, [])
    }

    /// Runs `body` with fd 2 pointed at a pipe; returns what reached fd 2 and the body's result.
    private func capturingDescriptor2<T>(_ body: () -> T) throws -> (String, T) {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        let saved = dup(2)
        XCTAssertGreaterThanOrEqual(saved, 0)
        XCTAssertEqual(dup2(ends[1], 2), 2)
        close(ends[1])
        let result = body()
        XCTAssertEqual(dup2(saved, 2), 2)
        close(saved)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(ends[0], &chunk, chunk.count)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        close(ends[0])
        return (String(decoding: bytes, as: UTF8.self), result)
    }
}

import XCTest
import Decoding
#if canImport(Glibc)
import Glibc
import StillImages
#endif

/// Accuracy floors on the real-photo corpus (../shared/corpus next to the repository, as on CI).
/// Achieved in release: QR 100/104, 1D 219/259 with 5 misreads (docs/accuracy.md). The QR floor is
/// issue 6's goal itself; the 1D floor leaves one image of slack below what is achieved (the goal
/// is 205), so a harmless change of pass order does not fail while a lost technique does.
final class AccuracyTests: XCTestCase {
    /// The corpus: ../shared/corpus beside the repository root (CI), or ../../shared/corpus (a git
    /// worktree under /work/wt/NAME).
    static func corpusPath() -> String? {
        let root = TestFiles.repositoryRoot
        let candidates = [root + "/../shared/corpus", root + "/../../shared/corpus"]
        return candidates.first { FileManagerless.isDirectory($0 + "/samples") }
    }

    func testCorpusAccuracyFloors() throws {
        guard let corpus = AccuracyTests.corpusPath() else {
            XCTFail("real-photo corpus not found at ../shared/corpus (relative to the repository root): the accuracy floors cannot be checked")
            return
        }
        let report = measureAccuracy(corpus: corpus)
        let qr = try XCTUnwrap(report.group("QR"), "no QR cases in \(corpus)")
        let linear = try XCTUnwrap(report.group("1D"), "no 1D cases in \(corpus)")
        print(report)
        XCTAssertEqual(qr.cases, 104)
        XCTAssertEqual(linear.cases, 259)
        XCTAssertGreaterThanOrEqual(qr.strict, 100, "QR reads fell below the floor:\n\(report.failures.joined(separator: "\n"))")
        XCTAssertGreaterThanOrEqual(linear.strict, 218, "1D reads fell below the floor:\n\(report.failures.joined(separator: "\n"))")
        XCTAssertLessThanOrEqual(qr.misreads + linear.misreads, 6, "more misreads than zbarimg's 6:\n\(report.failures.joined(separator: "\n"))")
    }
}

/// stat(2) without Foundation.
enum FileManagerless {
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

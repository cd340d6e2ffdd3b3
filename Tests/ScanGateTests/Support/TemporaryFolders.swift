#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Platform
import XCTest

/// This test run's folder in $TMPDIR (scangate-tests-XXXXXX), where `TestFiles.temporaryDirectory()` makes
/// each test's directories. When a test ends, what it made there is removed; when the run ends, the folder
/// too. Registered as an XCTest observer the first time a test asks for a directory.
final class TemporaryFolders: XCTestObservation, Sendable {
    let path: String

    static let run: Result<TemporaryFolders, SystemError> = {
        do throws(SystemError) {
            let folders = TemporaryFolders(path: try makeDirectory(template: NSTemporaryDirectory() + "scangate-tests-XXXXXX"))
            XCTestObservationCenter.shared.addTestObserver(folders)
            return .success(folders)
        } catch {
            return .failure(error)
        }
    }()

    private init(path: String) { self.path = path }

    func testCaseDidFinish(_ testCase: XCTestCase) { removeContents() }

    func testBundleDidFinish(_ testBundle: Bundle) {
        removeContents()
        remove(path)
    }

    private func removeContents() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for entry in entries { remove(path + "/" + entry) }
    }

    /// Clean-up cannot fail a test that already ended: a failure is said on stderr.
    private func remove(_ item: String) {
        do {
            try FileManager.default.removeItem(atPath: item)
        } catch {
            FileHandle.standardError.write(Data("scangate tests: could not remove \(item): \(error)\n".utf8))
        }
    }
}

/// mkdtemp(3): a new directory (0700) from a template ending in XXXXXX.
func makeDirectory(template: String) throws(SystemError) -> String {
    var bytes = Array(template.utf8CString)
    guard let made = mkdtemp(&bytes) else { throw SystemError("mkdtemp", template, .current) }
    return String(cString: made)
}

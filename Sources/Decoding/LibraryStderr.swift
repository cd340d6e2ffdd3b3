#if canImport(Glibc)
import Glibc
#endif
import CShim
import Core
import Platform

/// libzbar reports its failed internal checks (`zassert`, compiled in by Debian) with one
/// `fprintf(stderr, ...)` each, e.g. from the DataBar decoder on some photos:
///
///     WARNING: decoder/databar.c:1265: _zbar_decode_databar: Assertion "seg->finder >= 0" failed.
///     	i=22 f=-1(100) part=0
///
/// They are harmless (zbar returns and goes on) but they bypass the logger: no `<N>` priority, so
/// journald stores them at the service's default priority, many per second on a busy camera.
///
/// This routes stdio's `stderr` (not fd 2) through a handler (`shim_stderr_redirect`): a write that is a
/// zbar assertion report becomes one line on the logger at debug level, rate-limited under one key
/// (`rateLimitKey`: the first is logged, the rest counted and reported with the next after the logger's
/// repeat interval); every other write to stdio's stderr is written to fd 2 unchanged, at once, on the
/// writing thread. There is no thread and no pipe: nothing can fill up, block the decode queue, or be
/// lost when the process dies, and ScanGate's own logger and the Swift runtime (which write(2) to fd 2
/// directly) are not touched.
///
/// Installed once per process, on the first `ZbarScanner` (so before zbar can print). Until `route(to:)`
/// gives it the daemon's logger it logs to a logger at info level, so the reports are dropped.
public final class LibraryStderr: Sendable {
    /// The one router of this process's stdio stderr (installed on first use).
    public static let shared: LibraryStderr = {
        let router = LibraryStderr()
        router.install()
        return router
    }()

    /// The logger's rate-limit key for zbar's reports.
    public static let rateLimitKey = "zbar-stderr"
    /// A report is cut to this many bytes (zbar's are ~120).
    public static let maximumReportBytes = 1024

    private struct State {
        var logger = Logger(level: .info)
        /// The last zbar report did not end its line: the next write up to a newline belongs to it.
        var continuation = false
        var installed = false
        var reports = 0
    }
    private let state = PosixMutex(State())

    private init() {}

    /// Installs the router if it is not yet (idempotent, thread-safe).
    public static func install() { _ = shared }

    /// Sends zbar's reports to `logger` (at debug level), e.g. the daemon's, whose level may change later.
    public func route(to logger: Logger) {
        state.withLock { $0.logger = logger }
    }

    /// True when stdio's stderr is routed (false only if fopencookie failed; then zbar prints as before).
    public var isInstalled: Bool { state.withLock { $0.installed } }

    /// zbar reports seen so far (logged or not).
    public var reportCount: Int { state.withLock { $0.reports } }

    private func install() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let ok = shim_stderr_redirect({ context, bytes, count in
            guard let context, let bytes else { return }
            let router = Unmanaged<LibraryStderr>.fromOpaque(context).takeUnretainedValue()
            router.handle(UnsafeRawBufferPointer(start: bytes, count: count))
        }, context) == 0
        state.withLock { $0.installed = ok }
    }

    private func handle(_ raw: UnsafeRawBufferPointer) {
        let chunk = Array(raw)
        let (logger, routed) = state.withLock { s -> (Logger, Routed) in
            let r = LibraryStderr.classify(chunk, continuation: &s.continuation)
            if r.report != nil { s.reports += 1 }
            return (s.logger, r)
        }
        if let report = routed.report {
            logger.log(.debug, "zbar: " + report, rateLimitKey: LibraryStderr.rateLimitKey)
        }
        if !routed.passthrough.isEmpty { LibraryStderr.writeToDescriptor2(routed.passthrough) }
    }

    /// One write to stdio's stderr, sorted: a zbar report (as one line of text) and the bytes that go to
    /// fd 2 unchanged.
    public struct Routed: Equatable, Sendable {
        public var report: String?
        public var passthrough: [UInt8]
    }

    /// Sorts one write. A zbar report starts with "WARNING: " and holds ` Assertion "` (zassert's format);
    /// its lines are joined with a space (the tab before zbar's detail line dropped) and cut to
    /// `maximumReportBytes`. `continuation` carries a report whose line was not finished into the next write.
    public static func classify(_ chunk: [UInt8], continuation: inout Bool) -> Routed {
        var rest = chunk[...]
        var pieces: [ArraySlice<UInt8>] = []
        if continuation {
            if let newline = rest.firstIndex(of: 0x0A) {
                pieces.append(rest[..<newline])
                rest = rest[(newline + 1)...]
                continuation = false
            } else {
                return Routed(report: text(of: [rest]), passthrough: [])
            }
        }
        if rest.starts(with: warningPrefix), contains(rest, assertionMarker) {
            pieces.append(rest)
            // zassert's format ends with its own newline; without one the report goes on in the next write.
            continuation = rest.last != 0x0A
            return Routed(report: text(of: pieces), passthrough: [])
        }
        return Routed(report: pieces.isEmpty ? nil : text(of: pieces), passthrough: Array(rest))
    }

    private static let warningPrefix = Array("WARNING: ".utf8)
    private static let assertionMarker = Array(" Assertion \"".utf8)

    private static func contains(_ bytes: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        var i = bytes.startIndex
        while i + needle.count <= bytes.endIndex {
            if bytes[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }

    /// The pieces as one line: newlines and tabs become single spaces, blanks at the ends go.
    private static func text(of pieces: [ArraySlice<UInt8>]) -> String {
        var bytes: [UInt8] = []
        for b in pieces.joined() {
            let c: UInt8 = (b == 0x0A || b == 0x09 || b == 0x0D) ? 0x20 : b
            if c == 0x20 && (bytes.isEmpty || bytes.last == 0x20) { continue }
            bytes.append(c)
            if bytes.count >= maximumReportBytes { break }
        }
        while bytes.last == 0x20 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func writeToDescriptor2(_ bytes: [UInt8]) {
        _ = FileDescriptor(rawValue: 2).writeAll(bytes)
    }
}

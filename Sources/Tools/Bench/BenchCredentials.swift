#if canImport(Glibc)
import Glibc
#endif
import Core
import Credentials
import Platform
import Settings

/// What one signed-pass check costs on the decode queue: the whole of CredentialVerifier.verify (parse,
/// key lookup, signature, claims) per format and algorithm, and a one-time consume (append + fdatasync).
public struct CredentialBenchFigures: Sendable {
    public struct Measure: Sendable {
        public let name: String
        /// Milliseconds per call.
        public let times: Percentiles
        /// The pass's length in characters (0 for the store row).
        public let passLength: Int
    }

    public var measures: [Measure] = []

    /// Rows for `scangate bench`. Target: the p99 stays under 2 ms, a tenth of one ~20 ms zbar pass
    /// on a 640x480 frame (docs: stack.md); the lead puts the zbar figure beside it.
    public func rows(zbarPassMilliseconds: Double? = nil) -> [BenchReport.Row] {
        measures.map { m in
            let p50 = m.times.at(50), p99 = m.times.at(99)
            var measured = "p50 \(Int((p50 * 1000).rounded())) us, p99 \(Int((p99 * 1000).rounded())) us"
            if let zbar = zbarPassMilliseconds, zbar > 0 { measured += " (\(fmt(100 * p99 / zbar, 1))% of zbar)" }
            // The store's fdatasync depends on the disk under it: reported, not judged.
            guard m.passLength > 0 else { return BenchReport.Row(name: m.name, measured: measured, target: "(disk-dependent)", pass: nil) }
            return BenchReport.Row(name: m.name + " (\(m.passLength) chars)", measured: measured, target: "p99 < 2 ms", pass: p99 < 2)
        }
    }
}

/// Measures verification per pass (JWT Ed25519, JWT ES256, CWT Ed25519, CWT ES256), `iterations` calls
/// each after a warm-up, and `storeIterations` one-time consumes in a temporary replay store under
/// `storeDirectory` (fdatasync cost depends on that file system: tmpfs says nothing about an SD card).
public func benchCredentials(iterations: Int = 2000, storeIterations: Int = 200,
                             storeDirectory: String = "/var/tmp") throws -> CredentialBenchFigures {
    let now = WallClock.nowNanoseconds() / 1_000_000_000
    let ed = try PrivateKey.generate(.ed25519), es = try PrivateKey.generate(.es256)
    // Default kids (8 characters), as keygen writes them: the passes are the size a site's would be.
    let edID = try ed.publicKey().defaultKeyID(), esID = try es.publicKey().defaultKeyID()
    let keys = CredentialKeySet(keys: [CredentialKey(keyID: edID, publicKey: try ed.publicKey(), source: "bench"),
                                       CredentialKey(keyID: esID, publicKey: try es.publicKey(), source: "bench")], source: "bench")
    var settings = CredentialSettings()
    settings.format = .any
    settings.keys = "bench"
    let verifier = CredentialVerifier(settings: settings, keys: keys)
    var figures = CredentialBenchFigures()
    let cases: [(String, CredentialFormat, PrivateKey, String)] = [
        ("credential verify: JWT Ed25519", .jwt, ed, edID),
        ("credential verify: JWT ES256", .jwt, es, esID),
        ("credential verify: CWT Ed25519", .cwt, ed, edID),
        ("credential verify: CWT ES256", .cwt, es, esID),
    ]
    for (name, format, key, kid) in cases {
        let pass = try PassIssuer.issue(PassRequest(format: format, number: "12345678", lifetimeSeconds: 3600, keyID: kid,
                                                    oneTime: true, now: now), key: key)
        let bytes = Array(pass.utf8)
        for _ in 0..<50 { _ = verifier.verify(bytes, now: now) }
        var times: [Double] = []
        times.reserveCapacity(iterations)
        for _ in 0..<iterations {
            let start = BenchClock.wallMilliseconds()
            let result = verifier.verify(bytes, now: now)
            times.append(BenchClock.wallMilliseconds() - start)
            guard case .success = result else { throw CryptoError("bench", name, "the pass did not verify: \(result)") }
        }
        figures.measures.append(.init(name: name, times: Percentiles(times), passLength: bytes.count))
    }
    // One-time use: append one record and fdatasync it, per accepted pass.
    var template = Array((storeDirectory + "/scangate-bench-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw CryptoError("bench", storeDirectory, "mkdtemp: \(Errno.current)") }
    let directory = String(cString: made)
    defer {
        for suffix in ["", ".lock", ".tmp"] { unlink(directory + "/replay" + suffix) }
        rmdir(directory)
    }
    let store: ReplayStore
    do { store = try ReplayStore(path: directory + "/replay") } catch { throw CryptoError("bench", directory, "\(error)") }
    var times: [Double] = []
    for n in 0..<storeIterations {
        let key = try ReplayKey.make(format: .cwt, issuer: nil, tokenID: Array("bench-\(n)".utf8))
        let start = BenchClock.wallMilliseconds()
        let result = store.consume(key, holdUntil: now + 3600, now: now)
        times.append(BenchClock.wallMilliseconds() - start)
        guard result == .fresh else { throw CryptoError("bench", directory, "consume: \(result)") }
    }
    figures.measures.append(.init(name: "credential one-time consume (\(storeDirectory))", times: Percentiles(times), passLength: 0))
    return figures
}

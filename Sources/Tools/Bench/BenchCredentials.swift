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
    /// Holder-bound presentations (the pass and the holder's key-binding JWT): issue 22's target is a p99
    /// under a tenth of one zbar pass.
    public var presentations: [Measure] = []

    /// Revocation at a site's scale: a 1,000,000-entry Token Status List (1 bit, 1% revoked).
    public struct StatusListFigures: Sendable {
        public let entries: Int
        /// The list token's size, and the time to read, verify and inflate it (once per list change).
        public let tokenBytes: Int
        public let loadMilliseconds: Double
        /// A whole decision per read: the pass verified (JWT Ed25519), then its entry looked up.
        public let decide: Percentiles
        /// The lookup alone.
        public let lookup: Percentiles
        /// With a site policy as well (policy-file): schedule windows in all, of which the pass's group holds
        /// all but a few, and denied numbers; a whole decision per read, as `decide`.
        public var policyWindows = 0
        public var policyDenied = 0
        public var decideWithPolicy: Percentiles? = nil
    }

    public var statusList: StatusListFigures?

    /// Rows for `scangate bench`. Target: the p99 stays under 2 ms, a tenth of one ~20 ms zbar pass
    /// on a 640x480 frame (docs: stack.md); the lead puts the zbar figure beside it.
    public func rows(zbarPassMilliseconds: Double? = nil) -> [BenchReport.Row] {
        passRows(zbarPassMilliseconds: zbarPassMilliseconds) + presentationRows(zbarPassMilliseconds: zbarPassMilliseconds)
            + statusListRows(zbarPassMilliseconds: zbarPassMilliseconds)
    }

    /// Issue 21's target: deciding a read against the list stays under 5% of one zbar pass (p99).
    func statusListRows(zbarPassMilliseconds zbar: Double?) -> [BenchReport.Row] {
        guard let s = statusList else { return [] }
        func micro(_ ms: Double) -> String { "\(Int((ms * 1000).rounded())) us" }
        let share = zbar.map { $0 > 0 ? " (\(fmt(100 * s.decide.at(99) / $0, 1))% of zbar)" : "" } ?? ""
        return [
            BenchReport.Row(name: "status list of \(s.entries) entries: read, verify, inflate (\(s.tokenBytes / 1024) KiB token)",
                            measured: "\(fmt(s.loadMilliseconds, 1)) ms", target: "(once per list change)", pass: nil),
            Optional(BenchReport.Row(name: "decide a pass against that list (verify + lookup)",
                            measured: "p50 \(micro(s.decide.at(50))), p99 \(micro(s.decide.at(99)))\(share)",
                            target: "p99 < 5% of a zbar pass", pass: zbar.map { $0 > 0 && s.decide.at(99) < 0.05 * $0 })),
            s.decideWithPolicy.map { p in
                let share = zbar.map { $0 > 0 ? " (\(fmt(100 * p.at(99) / $0, 1))% of zbar)" : "" } ?? ""
                return BenchReport.Row(name: "decide a pass: the list and a site policy of \(s.policyWindows) schedule windows, \(s.policyDenied) denied numbers (Europe/Berlin)",
                                       measured: "p50 \(micro(p.at(50))), p99 \(micro(p.at(99)))\(share)",
                                       target: "p99 < 5% of a zbar pass", pass: zbar.map { $0 > 0 && p.at(99) < 0.05 * $0 })
            },
            BenchReport.Row(name: "status list lookup alone", measured: "p50 \(micro(s.lookup.at(50))), p99 \(micro(s.lookup.at(99)))",
                            target: "(part of the above)", pass: nil),
        ].compactMap { $0 }
    }

    func presentationRows(zbarPassMilliseconds zbar: Double?) -> [BenchReport.Row] {
        presentations.map { m in
            let p50 = m.times.at(50), p99 = m.times.at(99)
            var measured = "p50 \(Int((p50 * 1000).rounded())) us, p99 \(Int((p99 * 1000).rounded())) us"
            if let zbar, zbar > 0 { measured += " (\(fmt(p99 / zbar, 3))x a zbar pass)" }
            return BenchReport.Row(name: m.name + " (\(m.passLength) chars)", measured: measured, target: "p99 < 0.1x a zbar pass",
                                   pass: zbar.map { $0 > 0 && p99 < 0.1 * $0 })
        }
    }

    func passRows(zbarPassMilliseconds: Double?) -> [BenchReport.Row] {
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
        figures.measures.append(.init(name: name, times: try timeVerify(verifier, bytes, now: now, iterations: iterations, name),
                                      passLength: bytes.count))
    }
    // Holder binding: the pass (Ed25519, cnf) and the holder's key-binding JWT, as a phone presents it.
    var holderSettings = settings
    holderSettings.audience = "north"
    holderSettings.holderBinding = .accept
    let holderVerifier = CredentialVerifier(settings: holderSettings, keys: keys)
    for (name, holder) in [("credential verify: presentation, ES256 holder", try PrivateKey.generate(.es256)),
                           ("credential verify: presentation, Ed25519 holder", try PrivateKey.generate(.ed25519))] {
        var request = PassRequest(format: .jwt, number: "12345678", lifetimeSeconds: 30 * 86400, audience: "north", keyID: edID, now: now)
        request.holderKey = try holder.publicKey()
        let pass = try PassIssuer.issue(request, key: ed)
        let bytes = Array(try PresentationMaker.present(pass, holderKey: holder, audience: "north", now: now).utf8)
        figures.presentations.append(.init(name: name, times: try timeVerify(holderVerifier, bytes, now: now, iterations: iterations, name),
                                           passLength: bytes.count))
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
    figures.statusList = try benchStatusList(key: ed, keyID: edID, keys: keys, settings: settings, directory: directory,
                                             now: now, iterations: iterations)
    return figures
}

/// `iterations` verifications of `bytes` after 50 to warm up, in milliseconds each; every one must accept.
func timeVerify(_ verifier: CredentialVerifier, _ bytes: [UInt8], now: Int64, iterations: Int, _ name: String) throws -> Percentiles {
    for _ in 0..<50 { _ = verifier.verify(bytes, now: now) }
    var times: [Double] = []
    times.reserveCapacity(iterations)
    for _ in 0..<iterations {
        let start = BenchClock.wallMilliseconds()
        let result = verifier.verify(bytes, now: now)
        times.append(BenchClock.wallMilliseconds() - start)
        guard case .success = result else { throw CryptoError("bench", name, "it did not verify: \(result)") }
    }
    return Percentiles(times)
}

/// A 1,000,000-entry list (1 bit, every entry a deterministic pseudo-random 1% revoked) issued and written
/// to `directory`, read as the daemon reads it, then `iterations` decisions through CredentialPolicy (as
/// the decode queue makes them) for a pass whose entry is valid, and as many lookups alone.
func benchStatusList(key: PrivateKey, keyID: String, keys: CredentialKeySet, settings: CredentialSettings, directory: String,
                     now: Int64, iterations: Int, entries: Int = 1_000_000) throws -> CredentialBenchFigures.StatusListFigures {
    let uri = "https://issuer.example/status/1"
    var statuses = [UInt8](repeating: 0, count: entries)
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    for i in 0..<entries {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        if (seed >> 33) % 100 == 0 { statuses[i] = 1 }
    }
    let valid = entries - 1
    statuses[valid] = 0
    let token = try StatusListIssuer.jwt(uri: uri, bits: 1, statuses: statuses, issuedAt: now - 60, expiresAt: now + 86_400,
                                         keyID: keyID, key: key)
    let path = directory + "/list.jwt"
    do throws(AtomicFile.Failure) {
        try AtomicFile.replace(path, with: Array(token.utf8), mode: 0o600)
    } catch {
        throw CryptoError("bench", path, "\(error)")
    }
    defer { unlink(path) }
    let start = BenchClock.wallMilliseconds()
    let set = try StatusListSet.read(path: path, keys: keys, algorithms: [.ed25519, .es256], statePath: directory + "/policy-state").set
    let load = BenchClock.wallMilliseconds() - start
    guard set.lists.count == 1, set.list(uri: uri)?.list.count ?? 0 >= entries else {
        throw CryptoError("bench", path, "the list was not taken: \(set.refused)")
    }
    var quiet = settings
    quiet.requireSyncedClock = false
    let policy = CredentialPolicy(settings: quiet, keys: keys, store: nil, statusLists: set, now: { now }, logger: Logger(level: .error))
    let pass = Array(try PassIssuer.issue(PassRequest(format: .jwt, number: "12345678", lifetimeSeconds: 3600, keyID: keyID, now: now,
                                                      status: StatusReference(index: valid, uri: uri)), key: key).utf8)
    var decide: [Double] = [], lookup: [Double] = []
    decide.reserveCapacity(iterations)
    lookup.reserveCapacity(iterations)
    for _ in 0..<50 { _ = policy.evaluate(pass) }
    for _ in 0..<iterations {
        let t0 = BenchClock.wallMilliseconds()
        let result = policy.evaluate(pass)
        decide.append(BenchClock.wallMilliseconds() - t0)
        guard case .success = result else { throw CryptoError("bench", uri, "the pass was not accepted: \(result)") }
    }
    let reference = StatusReference(index: valid, uri: uri)
    for n in 0..<iterations {
        let probe = n % 2 == 0 ? reference : StatusReference(index: (n &* 7919) % entries, uri: uri)
        let t0 = BenchClock.wallMilliseconds()
        let result = set.check(probe, now: now, stale: .deny)
        lookup.append(BenchClock.wallMilliseconds() - t0)
        if n % 2 == 0, case .failure(let refusal) = result { throw CryptoError("bench", uri, "the valid entry was refused: \(refusal)") }
    }
    var figures = CredentialBenchFigures.StatusListFigures(entries: entries, tokenBytes: token.utf8.count, loadMilliseconds: load,
                                                           decide: Percentiles(decide), lookup: Percentiles(lookup))
    // The same decision with a site policy: 1,000 windows (995 in the pass's group, none of them open but
    // the last, so every one is tried) and 10,000 denied numbers, in a zone with daylight saving.
    var windows: [String] = []
    for i in 0..<995 {
        let day = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"][i % 7]
        windows.append("{\"days\":[\"\(day)\"],\"from\":\"03:00\",\"to\":\"03:01\"}")
    }
    windows.append("{\"days\":[\"mon\",\"tue\",\"wed\",\"thu\",\"fri\",\"sat\",\"sun\"],\"from\":\"00:00\",\"to\":\"24:00\"}")
    let others = (0..<4).map { "\"other\($0)\":{\"schedule\":[{\"days\":[\"mon\"],\"from\":\"08:00\",\"to\":\"17:00\"}]}" }
    let denied = (0..<10_000).map { "\"9\($0)\"" }
    let claims = "{\"ver\":1,\"iat\":\(now - 60),\"exp\":\(now + 86_400),\"tz\":\"Europe/Berlin\",\"door\":{\"id\":\"bench\",\"role\":\"both\"},"
        + "\"groups\":{\"staff\":{\"schedule\":[\(windows.joined(separator: ","))]},\(others.joined(separator: ","))},"
        + "\"holidays\":[\"2001-01-01\"],\"deny\":[\(denied.joined(separator: ","))]}"
    let policyPath = directory + "/policy.jwt"
    let policyToken = try SitePolicyIssuer.jwt(claims: claims, keyID: keyID, key: key)
    do throws(AtomicFile.Failure) {
        try AtomicFile.replace(policyPath, with: Array(policyToken.utf8), mode: 0o600)
    } catch {
        throw CryptoError("bench", policyPath, "\(error)")
    }
    defer { unlink(policyPath) }
    let site: SitePolicyInForce
    do throws(UsageError) {
        site = try SitePolicyInForce.read(path: policyPath, keys: keys, algorithms: [.ed25519, .es256], statePath: directory + "/policy-state").inForce
    } catch {
        throw CryptoError("bench", policyPath, error.message)
    }
    guard let held = site.policy else { throw CryptoError("bench", policyPath, "the site policy was not taken: \(site.refused ?? "")") }
    figures.policyWindows = held.groups.values.reduce(0) { $0 + $1.count }
    figures.policyDenied = held.deny.count
    let withPolicy = CredentialPolicy(settings: quiet, keys: keys, store: nil, statusLists: set, sitePolicy: site, now: { now }, logger: Logger(level: .error))
    var request = PassRequest(format: .jwt, number: "12345678", lifetimeSeconds: 3600, keyID: keyID, now: now, status: StatusReference(index: valid, uri: uri))
    request.group = "staff"
    let grouped = Array(try PassIssuer.issue(request, key: key).utf8)
    var timed: [Double] = []
    timed.reserveCapacity(iterations)
    for _ in 0..<50 { _ = withPolicy.evaluate(grouped) }
    for _ in 0..<iterations {
        let t0 = BenchClock.wallMilliseconds()
        let result = withPolicy.evaluate(grouped)
        timed.append(BenchClock.wallMilliseconds() - t0)
        guard case .success = result else { throw CryptoError("bench", policyPath, "the pass was not accepted: \(result)") }
    }
    figures.decideWithPolicy = Percentiles(timed)
    return figures
}

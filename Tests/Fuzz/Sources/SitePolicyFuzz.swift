import Components
import Core
import Credentials
import Platform

/// The site policy on hostile input: its claims (JSON, and CWT claims read as the JSON form), the whole
/// document through the verifier with the fuzz key set, a TZif file, and the hours of a parsed policy.
enum SitePolicyFuzz {
    /// The input is read four ways:
    /// - as the JSON claims: a policy that parses keeps its bounds (exp after iat, ver not negative, windows
    ///   within the day, at most the documented counts), and deciding hours with it at a few instants,
    ///   for a few groups, never traps;
    /// - as CWT claims (CBOR), turned into the JSON form and parsed with the same invariants;
    /// - as a signed document in either form: never verifies (no private key here);
    /// - as a TZif file: a zone that parses gives, at instants across the whole range, a UTC offset within
    ///   26 hours and a local time whose fields are in range;
    /// - as an anti-passback message from `<site>/passback/<number>`: one that parses keeps its bounds and
    ///   is written back as a message that parses to the same use.
    @Sendable static func run(_ bytes: [UInt8]) {
        if case .success(let policy) = Result(catching: { () throws(SitePolicyError) in try SitePolicy.parse(bytes) }) {
            check(policy)
        }
        if case .success(let json) = Result(catching: { () throws(SitePolicyError) in try SitePolicyToken.cwtClaimsAsJSON(bytes) }),
           case .success(let policy) = Result(catching: { () throws(SitePolicyError) in try SitePolicy.parse(json) }) {
            check(policy)
        }
        let verified = Result { () throws(SitePolicyError) in
            try SitePolicyToken.verify(bytes, keys: CredentialFuzz.keys, algorithms: [.ed25519, .es256])
        }
        if case .success = verified { require(false, "a site policy verified without a private key") }
        if case .success(let use) = SiteLink.parse(bytes) {
            require(bytes.count <= SiteLink.maxMessageBytes, "a message of \(bytes.count) bytes")
            require(!use.kiosk.isEmpty && use.kiosk.utf8.count <= 64 && (1...1024).contains(use.number.count) && use.at > 0, "bounds: \(use)")
            let again = SiteLink.parse(Array(SiteLink.message(use).utf8))
            require((try? again.get()) == use, "written back, it reads as another use: \(use)")
        }
        if case .success(let zone) = Result(catching: { () throws(ZoneRulesError) in try ZoneRules.parse(bytes, name: "Fuzz/Zone") }) {
            for t: Int64 in [Int64.min / 4, -(1 << 40), -2_208_988_800, -1, 0, 1_000_000_000, 1_790_000_000, 2_145_916_800, 4_102_444_800, 1 << 40, Int64.max / 4] {
                let offset = zone.utcOffset(at: t)
                require(abs(offset) <= 26 * 3600, "offset \(offset) at \(t)")
                guard abs(t) < 1 << 40 else { continue }
                let local = zone.localTime(at: t)
                require((1...12).contains(local.month) && (1...31).contains(local.day) && (0...6).contains(local.weekday)
                        && (0..<1440).contains(local.minuteOfDay) && (0..<60).contains(local.second), "local time \(local) at \(t)")
            }
        }
    }

    static func check(_ policy: SitePolicy) {
        require(policy.expiresAt > policy.issuedAt && policy.version >= 0, "ver \(policy.version), iat \(policy.issuedAt), exp \(policy.expiresAt)")
        require(policy.groups.count <= SitePolicy.maxGroups && policy.deny.count <= SitePolicy.maxDeny
                && policy.holidays.count <= SitePolicy.maxHolidays, "counts")
        let windows = policy.groups.values.flatMap { $0 }
        require(windows.count <= SitePolicy.maxWindows, "\(windows.count) windows")
        for w in windows {
            require((0..<1440).contains(w.from) && (0...1440).contains(w.to) && !w.days.isEmpty && w.days.allSatisfy { (0...6).contains($0) },
                    "window \(w)")
        }
        let groups: [String?] = [nil, "default"] + policy.groupNames.prefix(3).map { Optional($0) }
        for t: Int64 in [policy.issuedAt, policy.expiresAt - 1, 0] {
            for g in groups {
                _ = SiteSchedule.check(group: g, policy: policy, zone: .utc, now: t)
            }
        }
    }
}

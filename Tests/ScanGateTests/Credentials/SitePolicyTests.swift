import Core
@testable import Credentials
import XCTest

/// The site policy's claims, windows and rollback guard, as values (SitePolicyRunTests runs them through
/// the daemon with documents signed by PyJWT and the `cwt` package).
final class SitePolicyTests: XCTestCase {
    func parse(_ text: String) throws -> SitePolicy {
        try SitePolicy.parse(Array(text.utf8))
    }

    let base = "\"ver\":2,\"iat\":1000,\"exp\":2000,\"tz\":\"Europe/Berlin\""

    func testAFullDocumentIsRead() throws {
        let p = try parse("{\(base),\"door\":{\"id\":\"d1\",\"role\":\"in\"},\"groups\":{\"cleaning\":{\"schedule\":[{\"days\":[\"mon\",\"fri\"],\"from\":\"18:00\",\"to\":\"22:00\"}]}},"
                          + "\"holidays\":[\"2026-12-25\"],\"antipassback\":{\"mode\":\"hard\",\"timeout_s\":3600},\"deny\":[\"4711\",90210]}")
        XCTAssertEqual(p.version, 2)
        XCTAssertEqual(p.door, SitePolicy.Door(id: "d1", role: .in))
        XCTAssertEqual(p.groups[Array("cleaning".utf8)], [SitePolicy.Window(days: [0, 4], from: 1080, to: 1320)])
        XCTAssertEqual(p.holidays, [CivilDate.days(year: 2026, month: 12, day: 25)])
        XCTAssertEqual(p.antipassback, SitePolicy.Antipassback(mode: .hard, timeoutSeconds: 3600))
        XCTAssertEqual(p.deny, [Array("4711".utf8), Array("90210".utf8)])
    }

    func testEachWrongMemberIsNamed() {
        let cases: [(String, String)] = [
            ("{\"iat\":1000,\"exp\":2000,\"tz\":\"UTC\"}", "ver must be"),
            ("{\"ver\":-1,\"iat\":1000,\"exp\":2000,\"tz\":\"UTC\"}", "ver must be"),
            ("{\"ver\":1,\"iat\":2000,\"exp\":1000,\"tz\":\"UTC\"}", "exp 1000 is not after iat 2000"),
            ("{\"ver\":1,\"iat\":1000,\"exp\":2000}", "tz must be"),
            ("{\(base),\"door\":{\"role\":\"sideways\"}}", "door.role must be one of in, out, both"),
            ("{\(base),\"groups\":{\"g\":{\"schedule\":[{\"days\":[\"mo\"],\"from\":\"08:00\",\"to\":\"09:00\"}]}}}", "groups[\"g\"].schedule[0].days"),
            ("{\(base),\"groups\":{\"g\":{\"schedule\":[{\"days\":[\"mon\"],\"from\":\"8:00\",\"to\":\"09:00\"}]}}}", "groups[\"g\"].schedule[0].from"),
            ("{\(base),\"groups\":{\"g\":{\"schedule\":[{\"days\":[\"mon\"],\"from\":\"24:00\",\"to\":\"09:00\"}]}}}", "groups[\"g\"].schedule[0].from"),
            ("{\(base),\"groups\":{\"g\":{\"schedule\":[{\"days\":[\"mon\"],\"from\":\"08:00\",\"to\":\"09:60\"}]}}}", "groups[\"g\"].schedule[0].to"),
            ("{\(base),\"groups\":{\"g\":{}}}", "groups[\"g\"] must be an object with a \"schedule\" array"),
            ("{\(base),\"holidays\":[\"2026-02-30\"]}", "holidays[0] must be a date"),
            ("{\(base),\"antipassback\":{\"mode\":\"strict\"}}", "antipassback.mode must be one of off, soft, hard"),
            ("{\(base),\"antipassback\":{\"mode\":\"soft\",\"timeout_s\":-5}}", "antipassback.timeout_s"),
            ("{\(base),\"deny\":[true]}", "deny[0] must be a credential number"),
            ("{\(base),\"deny\":[\"\"]}", "deny[0] must be 1 to 128 bytes"),
            ("{\(base),\"ver\":3}", "the claims:"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try parse(text), text) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
            }
        }
    }

    func testWindowsIncludingOvernightOnes() {
        let day = SitePolicy.Window(days: [0], from: 8 * 60, to: 17 * 60)
        XCTAssertTrue(day.contains(weekday: 0, minute: 8 * 60))
        XCTAssertFalse(day.contains(weekday: 0, minute: 17 * 60), "to is not inside")
        XCTAssertFalse(day.contains(weekday: 1, minute: 9 * 60))
        let night = SitePolicy.Window(days: [6], from: 22 * 60, to: 6 * 60)   // Sunday 22:00 to Monday 06:00
        XCTAssertTrue(night.contains(weekday: 6, minute: 23 * 60))
        XCTAssertTrue(night.contains(weekday: 0, minute: 5 * 60 + 59))
        XCTAssertFalse(night.contains(weekday: 0, minute: 6 * 60))
        XCTAssertFalse(night.contains(weekday: 6, minute: 5 * 60), "the morning of the listed day is not inside")
        let whole = SitePolicy.Window(days: [2], from: 0, to: 1440)
        XCTAssertTrue(whole.contains(weekday: 2, minute: 1439))
        XCTAssertFalse(whole.contains(weekday: 3, minute: 0))
    }

    func testTheRollbackGuardKeepsTheHighestVersionAcrossASave() throws {
        var state = PolicyState()
        XCTAssertTrue(state.recordPolicy(version: 5, issuedAt: 100))
        XCTAssertTrue(state.isRollback(version: 4, issuedAt: 200))
        XCTAssertTrue(state.isRollback(version: 5, issuedAt: 99), "the same ver issued earlier")
        XCTAssertFalse(state.isRollback(version: 5, issuedAt: 100))
        XCTAssertFalse(state.recordPolicy(version: 4, issuedAt: 300))
        XCTAssertTrue(state.recordPolicy(version: 6, issuedAt: 90))
        state.record(uri: "https://s/1", issuedAt: 42)
        let read = try PolicyState.parse(Array(state.json.utf8), path: "test")
        XCTAssertEqual(read, state)
        XCTAssertEqual(state.json, "{\"status_lists\":[{\"uri\":\"https://s/1\",\"iat\":42}],\"policy\":{\"ver\":6,\"iat\":90}}\n")
    }

    func testDatesAndTheirDays() {
        XCTAssertEqual(CivilDate.days(year: 1970, month: 1, day: 1), 0)
        XCTAssertEqual(CivilDate.days(year: 2000, month: 3, day: 1), 11_017)
        XCTAssertEqual(CivilDate.parse("2024-02-29"), CivilDate.days(year: 2024, month: 2, day: 29))
        XCTAssertNil(CivilDate.parse("2023-02-29"))
        XCTAssertNil(CivilDate.parse("2023-13-01"))
        XCTAssertNil(CivilDate.parse("2023-1-01"))
    }
}

import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import XCTest
import Wiegand
import Settings

/// The transmitter's closing totals: the per-frame stall lines are rate-limited, so the line it logs at
/// close is where an operator (and the HIL timing checks) can count every frame a stall cut.
extension WiegandTransmitterTests {
    func testTwoStallsInARowAreBothCountedAtClose() throws {
        let t = self
        let chip = MemoryGpiod.wiegand()
        let logs = LogCapture()
        let out = try WiegandOutput(settings: t.settings { $0.frameGapMs = 50 }, logger: logs.logger, feedback: nil,
                                    calls: chip, runtime: t.runtime { $0.stallLimitMs = nil })
        // Bit 4 of the first frame hangs 30 ms: the frame is cut there.
        chip.delaySet(after: 6, milliseconds: 30)
        XCTAssertEqual(out.offer(t.read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        // And again in the second frame (its set count starts after the first frame's 9 sets).
        chip.delaySet(after: 6, milliseconds: 30)
        XCTAssertEqual(out.offer(t.read("325")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        XCTAssertEqual(out.offer(t.read("326")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        out.close(deadline: .now().adding(milliseconds: 1000))
        let stallLines = logs.all.filter { $0.contains("the rest is not sent") }
        XCTAssertEqual(stallLines.count, 1, "the second stall line is rate-limited: \(logs.all)")
        let totals = logs.all.filter { $0.contains("cut by a stall)") }
        // The stretched count depends on this machine's scheduling (a 20 us pulse preempted): not asserted.
        XCTAssertEqual(totals.count, 1, "\(logs.all)")
        XCTAssertTrue(totals.first?.hasPrefix("<\(LogLevel.warning.rawValue)>Wiegand: 1 frame sent, 2 not sent or cut (2 cut by a stall), ") == true,
                      "\(logs.all)")
    }
}

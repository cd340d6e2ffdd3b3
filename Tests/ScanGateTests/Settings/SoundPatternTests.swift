import XCTest
@testable import Sound
import Settings

final class SoundPatternTests: XCTestCase {
    func testParsesTonesAndPauses() throws {
        let p = try BeepPattern(parsing: "1800:80, 0:40 ,1800:80")
        XCTAssertEqual(p.tones, [Tone(hertz: 1800, milliseconds: 80), Tone(hertz: 0, milliseconds: 40),
                                 Tone(hertz: 1800, milliseconds: 80)])
        XCTAssertEqual(p.totalMilliseconds, 200)
        XCTAssertEqual(p.description, "1800:80,0:40,1800:80")
        XCTAssertEqual(try BeepPattern(parsing: p.description), p)
    }

    func testDefaults() {
        XCTAssertEqual(BeepPattern.defaultGood.description, "2000:100")
        XCTAssertEqual(BeepPattern.defaultError.description, "700:90,0:60,700:90")
        let s = BeepSettings()
        XCTAssertFalse(s.enabled)
        XCTAssertEqual(s.device, "default")
        XCTAssertEqual(s.error, BeepPattern.defaultError)
        XCTAssertEqual(s.cue, BeepPattern.defaultCue)
        XCTAssertEqual(s.toneHertz, 2000)
    }

    func testRejectsWhatIsNotAllowedAndSaysWhatIs() {
        let cases: [(String, String)] = [
            ("2000", "is not a beep pattern"), ("2000:", "is not a beep pattern"), ("a:b", "is not a beep pattern"),
            ("2000:100,", "is not a beep pattern"), ("", "is not a beep pattern"),
            ("10:100", "frequency 10 Hz is not 0 (pause) or 20-20000"),
            ("30000:100", "frequency 30000 Hz"), ("2000:0", "duration 0 ms is not 1-5000"),
            ("2000:6000", "duration 6000 ms"), ("0:100", "has only pauses"),
            ("2000:5000,2000:5000,2000:5000", "lasts 15000 ms"),
            (Array(repeating: "100:1", count: 33).joined(separator: ","), "has 33 tones"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try BeepPattern(parsing: text), text) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(expected), "\(text): \(message)")
                XCTAssertTrue(message.contains("HZ:MS"), "says what is allowed: \(message)")
            }
        }
    }

    func testSynthesizedToneHasFrequencyDurationAmplitudeAndSoftEdges() throws {
        let synth = ToneSynthesizer(sampleRate: 48_000, volume: 0.8)
        let samples = synth.render(try BeepPattern(parsing: "1000:50,0:20,3000:30"))
        XCTAssertEqual(samples.count, 48 * 100)
        let tones = SoundSignalAnalysis.tones(samples, rate: 48_000)
        XCTAssertEqual(tones.count, 2, "\(tones)")
        XCTAssertEqual(tones[0].hertz, 1000, accuracy: 20)
        XCTAssertEqual(tones[1].hertz, 3000, accuracy: 60)
        XCTAssertEqual(tones[0].milliseconds, 50, accuracy: 5)
        XCTAssertEqual(tones[1].milliseconds, 30, accuracy: 3)
        let peak = Double(samples.map { abs(Int($0)) }.max() ?? 0) / 32767
        XCTAssertEqual(peak, 0.8, accuracy: 0.01)
        // Attack and release ramps: each tone starts and ends at zero and the first/last 1 ms stay quiet.
        XCTAssertEqual(samples[0], 0)
        XCTAssertLessThan(samples[0..<48].map { abs(Int($0)) }.max() ?? 0, Int(0.8 * 32767 * 0.3))
        XCTAssertLessThan(samples[(2400 - 48)..<2400].map { abs(Int($0)) }.max() ?? 0, Int(0.8 * 32767 * 0.3))
        XCTAssertTrue(samples[2400..<(2400 + 960)].allSatisfy { $0 == 0 }, "0 Hz is silence")
    }

    func testVolumeZeroIsSilentAndTooHighToneForRateIsSilent() throws {
        XCTAssertTrue(ToneSynthesizer(sampleRate: 48_000, volume: 0).render(.defaultGood).allSatisfy { $0 == 0 })
        let low = ToneSynthesizer(sampleRate: 8_000, volume: 1)
        XCTAssertFalse(low.canPlay(hertz: 5_000))
        XCTAssertTrue(low.render(try BeepPattern(parsing: "5000:10")).allSatisfy { $0 == 0 })
    }
}

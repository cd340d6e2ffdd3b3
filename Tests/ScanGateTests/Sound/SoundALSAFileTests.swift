import XCTest
import Core
import Platform
@testable import Sound
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// The beep through a REAL ALSA PCM: a `file` plugin (slave `null`) defined in-process with
/// snd_config_load + snd_pcm_open_lconf writes every sample played to a raw file, which is analysed.
final class SoundALSAFileTests: XCTestCase {
    private var directory = ""
    private var rawPath: String { directory + "/beep.raw" }

    override func setUpWithError() throws {
        directory = try TestFiles.temporaryDirectory()
    }

    /// `pcm.beeptest`: everything played lands in `rawPath` as S16_LE mono 48000 Hz.
    private func fileConfiguration() throws -> ALSAConfiguration {
        try ALSAConfiguration(text: """
            pcm.beeptest {
                type file
                slave { pcm { type null } }
                file "\(rawPath)"
                format "raw"
            }
            """)
    }

    private func readSamples() throws -> [Int16] {
        let fd = try XCTUnwrap(try? FileDescriptor.open(rawPath, O_RDONLY).get(), "open \(rawPath)")
        defer { _ = fd.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0).get() }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }

    /// A logger whose lines the test can wait for.
    private func capturingLogger() -> (Logger, LogCapture) {
        let capture = LogCapture()
        return (Logger(level: .debug, sink: { capture.append($0) }), capture)
    }

    private func event(_ verdict: Verdict = .accepted) -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: 0,
                  symbol: DecodedSymbol(symbology: .qr, data: Array("HELLO".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                  frame: 0, dequeuedAt: .now(), emittedAt: .now(), verdict: verdict)
    }

    private func settings(good: String = "2000:100", error: String? = nil, volume: Double = 0.5) throws -> BeepSettings {
        var s = BeepSettings()
        s.good = try BeepPattern(parsing: good)
        if let error { s.error = try BeepPattern(parsing: error) }
        s.device = "beeptest"
        s.volume = volume
        return s
    }

    /// Plays one read's feedback through the beep on the file PCM and returns what reached the file.
    private func playThroughSink(_ settings: BeepSettings, verdict: Verdict) throws -> [Int16] {
        let (logger, log) = capturingLogger()
        let sink = BeepFeedback(settings: settings, logger: logger, configuration: try fileConfiguration())
        let expected = (verdict.isAccepted ? settings.good : settings.error)!.description
        sink.play(verdict.isAccepted ? .grant : .deny)
        XCTAssertTrue(log.wait(for: "beep: played \(expected) on beeptest", within: 10), log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertFalse(log.text.contains("<4>"), "no warning expected: \(log.text)")
        return try readSamples()
    }

    // MARK: - Tests

    func testGoodBeepHasConfiguredFrequencyAndDuration() throws {
        let samples = try playThroughSink(try settings(good: "2000:100"), verdict: .accepted)
        let tones = SoundSignalAnalysis.tones(samples, rate: 48_000)
        XCTAssertEqual(tones.count, 1, "one tone expected, got \(tones)")
        let tone = try XCTUnwrap(tones.first)
        XCTAssertEqual(tone.hertz, 2000, accuracy: 2000 * 0.02)
        XCTAssertEqual(tone.milliseconds, 100, accuracy: 10)
    }

    func testErrorBeepIsTwoTonesWithAGap() throws {
        let samples = try playThroughSink(try settings(error: "700:90,0:60,700:90"), verdict: .rejected(reason: "test"))
        let tones = SoundSignalAnalysis.tones(samples, rate: 48_000)
        XCTAssertEqual(tones.count, 2, "two tones expected, got \(tones)")
        for tone in tones {
            XCTAssertEqual(tone.hertz, 700, accuracy: 700 * 0.02)
            XCTAssertEqual(tone.milliseconds, 90, accuracy: 9)
        }
        if tones.count == 2 {
            let gap = tones[1].startMilliseconds - (tones[0].startMilliseconds + tones[0].milliseconds)
            XCTAssertEqual(gap, 60, accuracy: 6)
        }
    }

    func testDefaultErrorPatternIsLowerAndDoubled() throws {
        var s = try settings()
        s.error = BeepPattern.defaultError
        let tones = SoundSignalAnalysis.tones(try playThroughSink(s, verdict: .rejected(reason: "test")), rate: 48_000)
        XCTAssertEqual(tones.count, 2, "\(tones)")
        XCTAssertTrue(tones.allSatisfy { $0.hertz < 2000 * 0.9 }, "\(tones)")
    }

    func testVolumeSetsPeakAmplitude() throws {
        for volume in [0.25, 1.0] {
            let samples = try playThroughSink(try settings(good: "1000:100", volume: volume), verdict: .accepted)
            let peak = Double(samples.map { abs(Int($0)) }.max() ?? 0)
            XCTAssertEqual(peak / Double(Int16.max), volume, accuracy: 0.02, "volume \(volume)")
            let tone = try XCTUnwrap(SoundSignalAnalysis.tones(samples, rate: 48_000).first)
            XCTAssertEqual(tone.hertz, 1000, accuracy: 20)
        }
    }

    func testPCMDeviceWritesAllFramesAndReportsRate() throws {
        let device = try PCMDevice(name: "beeptest", calls: LibASound(), configuration: try fileConfiguration())
        XCTAssertEqual(device.sampleRate, 48_000)
        XCTAssertEqual(device.channels, 1)
        let samples = ToneSynthesizer(sampleRate: 48_000, volume: 0.5).render(try BeepPattern(parsing: "1500:200"))
        var position = 0
        let deadline = MonotonicInstant.now().adding(milliseconds: 10_000)
        while position < samples.count && MonotonicInstant.now() < deadline {
            let n = try device.write(samples[position...])
            if n == 0 { try device.waitWritable(timeoutMilliseconds: 20) }
            position += n
        }
        try device.drain(within: 1000)
        try device.close()
        XCTAssertThrowsError(try device.write(samples[0...]))  // closed: EBADFD, not a crash
        let written = try readSamples()
        XCTAssertEqual(written, samples)
    }

    func testMissingDeviceWarnsOnceAndEventsStillFlow() throws {
        var s = try settings()
        s.device = "hw:99"
        let (logger, log) = capturingLogger()
        let sink = BeepFeedback(settings: s, logger: logger)  // the system's ALSA configuration
        XCTAssertTrue(log.wait(for: "beep: cannot open ALSA device hw:99", within: 10), log.text)
        for _ in 0..<20 { sink.play(.grant) }   // never blocks, never crashes
        sink.play(.deny)
        let closed = expectation(description: "close returns")
        DispatchQueue.global().async { sink.close(deadline: .now().adding(milliseconds: 2000)); closed.fulfill() }
        wait(for: [closed], timeout: 10)
        let warnings = log.all.filter { $0.hasPrefix("<4>") }
        XCTAssertEqual(warnings.count, 1, "one rate-limited warning expected: \(warnings)")
        XCTAssertTrue(warnings.first?.contains("hw:99") ?? false)
        XCTAssertTrue(warnings.first?.contains("snd_pcm_open") ?? false, "names the ALSA call: \(warnings)")
    }

    func testClosingMidBeepReturnsPromptly() throws {
        let (logger, log) = capturingLogger()
        let sink = BeepFeedback(settings: try settings(good: "440:5000,880:5000"), logger: logger,
                            configuration: try fileConfiguration())
        XCTAssertTrue(log.wait(for: "beep: ALSA device beeptest open", within: 10), log.text)
        sink.play(.grant)
        let closed = expectation(description: "close returns")
        DispatchQueue.global().async { sink.close(deadline: .now().adding(milliseconds: 2000)); closed.fulfill() }
        wait(for: [closed], timeout: 2 + 3)
        XCTAssertFalse(log.text.contains("did not stop"), log.text)
    }
}

/// A pthread mutex without Foundation.
final class SoundTestLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}

/// Finds the tones in a recording and measures each one's frequency and duration.
enum SoundSignalAnalysis {
    struct MeasuredTone: CustomStringConvertible {
        var startMilliseconds: Double
        var milliseconds: Double
        var hertz: Double
        var description: String { "\(Int(hertz)) Hz for \(milliseconds) ms at \(startMilliseconds) ms" }
    }

    /// Runs of sound separated by at least 1 ms of digital silence; frequency from upward zero crossings.
    static func tones(_ samples: [Int16], rate: Int) -> [MeasuredTone] {
        let minGap = rate / 1000
        var runs: [Range<Int>] = []
        var start: Int?
        var lastNonZero = -1
        for (i, s) in samples.enumerated() where s != 0 {
            if let st = start, i - lastNonZero > minGap {
                runs.append(st..<(lastNonZero + 1))
                start = i
            } else if start == nil {
                start = i
            }
            lastNonZero = i
        }
        if let st = start { runs.append(st..<(lastNonZero + 1)) }
        return runs.map { run in
            var crossings: [Double] = []
            var previous = Double(samples[run.lowerBound])
            for i in (run.lowerBound + 1)..<run.upperBound {
                let current = Double(samples[i])
                if previous < 0 && current >= 0 {
                    crossings.append(Double(i - 1) + (-previous) / (current - previous))
                }
                previous = current
            }
            let hertz = crossings.count >= 2
                ? Double(crossings.count - 1) / ((crossings.last! - crossings.first!) / Double(rate)) : 0
            return MeasuredTone(startMilliseconds: Double(run.lowerBound) * 1000 / Double(rate),
                                milliseconds: Double(run.count) * 1000 / Double(rate), hertz: hertz)
        }
    }
}

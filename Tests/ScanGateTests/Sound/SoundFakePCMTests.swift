import XCTest
import Core
import Platform
@testable import Sound
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// A scripted libasound for the paths a file PCM cannot produce: underruns, busy devices, a device
/// that plays in real time (so a beep can be cut short), stereo-only devices and other rates.
final class FakeALSA: ALSACalls, @unchecked Sendable {
    private let lock = SoundTestLock()
    private let handle = OpaquePointer(bitPattern: 0x5ca9)!

    // Script (set before use).
    var openCodes: [Int32] = []          // consumed per open; empty: success
    var monoRefused = false
    var rate: UInt32 = 48_000
    var writeCodes: [Int] = []           // consumed per writei; empty: accept
    var recoverCode: Int32 = 0
    /// Plays in real time: writei takes only what the "hardware" consumed (96 frames per 2 ms wait).
    var paced = false

    // Record.
    private(set) var opens = 0
    private(set) var closes = 0
    private(set) var recovers: [Int32] = []
    private(set) var drops = 0
    private(set) var channels: UInt32 = 0
    private(set) var written: [Int16] = []
    private var state: PCMState = .open
    private var room = 0

    func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.locked(body) }
    var writtenFrames: Int { locked { channels == 0 ? 0 : written.count / Int(channels) } }

    func pcmOpen(_ name: String, nonBlocking: Bool, config: OpaquePointer?) -> (code: Int32, pcm: OpaquePointer?) {
        locked {
            opens += 1
            if !openCodes.isEmpty { let c = openCodes.removeFirst(); if c < 0 { return (c, nil) } }
            state = .open
            return (0, handle)
        }
    }
    func pcmSetParams(_ pcm: OpaquePointer, channels: UInt32, rate: UInt32, latencyMicroseconds: UInt32) -> Int32 {
        locked {
            if monoRefused && channels == 1 { return -EINVAL }
            self.channels = channels
            state = .prepared
            return 0
        }
    }
    func pcmCurrentRate(_ pcm: OpaquePointer) -> (code: Int32, rate: UInt32) { (0, rate) }
    func pcmPrepare(_ pcm: OpaquePointer) -> Int32 { locked { state = .prepared; return 0 } }
    func pcmWritei(_ pcm: OpaquePointer, _ buffer: UnsafeRawPointer, frames: Int) -> Int {
        locked {
            if !writeCodes.isEmpty {
                let c = writeCodes.removeFirst()
                if c < 0 { state = .xrun; return c }
            }
            var n = frames
            if paced {
                n = min(frames, room)
                if n == 0 { return Int(-EAGAIN) }
                room -= n
            }
            let samples = buffer.assumingMemoryBound(to: Int16.self)
            written.append(contentsOf: UnsafeBufferPointer(start: samples, count: n * Int(channels)))
            state = .running
            return n
        }
    }
    func pcmRecover(_ pcm: OpaquePointer, _ error: Int32) -> Int32 {
        locked { recovers.append(error); if recoverCode == 0 { state = .prepared }; return recoverCode }
    }
    func pcmWait(_ pcm: OpaquePointer, timeoutMilliseconds: Int32) -> Int32 {
        if paced { sleepThread(milliseconds: 2) }
        return locked { room += 96; return 1 }
    }
    func pcmState(_ pcm: OpaquePointer) -> PCMState { locked { state } }
    func pcmDrain(_ pcm: OpaquePointer) -> Int32 { locked { state = .setup; return 0 } }
    func pcmDrop(_ pcm: OpaquePointer) -> Int32 { locked { drops += 1; state = .setup; return 0 } }
    func pcmClose(_ pcm: OpaquePointer) -> Int32 { locked { closes += 1; state = .open; return 0 } }
    func errorText(_ code: Int32) -> String { String(cString: strerror(-code)) }
}

final class SoundFakePCMTests: XCTestCase {
    private func settings(good: String = "2000:100") -> BeepSettings {
        var s = BeepSettings()
        s.good = try? BeepPattern(parsing: good)
        s.device = "fake"
        return s
    }

    private func event(_ verdict: Verdict = .accepted) -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: 0,
                  symbol: DecodedSymbol(symbology: .qr, data: [0x41], bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                  frame: 0, dequeuedAt: .now(), emittedAt: .now(), verdict: verdict)
    }

    private func makeSink(_ fake: FakeALSA, _ settings: BeepSettings, backoff: Double = 2_000) -> (BeepFeedback, LogCapture) {
        let log = LogCapture()
        let logger = Logger(level: .debug, sink: { log.append($0) })
        return (BeepFeedback(settings: settings, logger: logger, calls: fake, retryBackoffMilliseconds: backoff), log)
    }

    func testUnderrunIsRecoveredAndTheWholeBeepIsPlayed() {
        let fake = FakeALSA()
        fake.writeCodes = [Int(-EPIPE)]
        let (sink, log) = makeSink(fake, settings())
        sink.play(.grant)
        XCTAssertTrue(log.wait(for: "beep: played 2000:100", within: 10), log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(fake.locked { fake.recovers }, [-EPIPE])
        XCTAssertEqual(fake.writtenFrames, 4800)
        // The gap it left is reported once, as a warning naming the device.
        XCTAssertTrue(log.text.contains("<4>beep: 2000:100 on ALSA device fake had 1 underrun: "), log.text)
        XCTAssertEqual(log.text.components(separatedBy: "underrun").count - 1, 1, log.text)
    }

    func testFailedRecoveryNamesDeviceAndCallAndIsRetriedLater() {
        let fake = FakeALSA()
        fake.writeCodes = [Int(-EPIPE)]
        fake.recoverCode = -ENODEV
        let (sink, log) = makeSink(fake, settings(), backoff: 50)
        sink.play(.grant)
        XCTAssertTrue(log.wait(for: "beep: lost ALSA device fake", within: 10), log.text)
        XCTAssertTrue(log.text.contains("snd_pcm_recover"), log.text)
        XCTAssertTrue(log.text.contains("No such device"), log.text)
        fake.locked { fake.recoverCode = 0 }
        // The device comes back: a later event (after the backoff) reopens it and beeps.
        XCTAssertTrue(waitUntil(10) {
            sink.play(.grant)
            sleepThread(milliseconds: 20)
            return log.text.contains("beep: played 2000:100")
        }, log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(fake.locked { fake.opens }, 2)
        XCTAssertEqual(fake.locked { fake.closes }, 2)
    }

    func testBusyDeviceWarnsAndIsRetriedAtANextEventAfterBackoff() {
        let fake = FakeALSA()
        fake.openCodes = [-EBUSY]
        let (sink, log) = makeSink(fake, settings(), backoff: 1_500)
        XCTAssertTrue(log.wait(for: "cannot open ALSA device fake", within: 10), log.text)
        XCTAssertTrue(log.text.contains("Device or resource busy"), log.text)
        sink.play(.grant)  // within the backoff: skipped, not retried
        XCTAssertTrue(log.wait(for: "beep: skipped", within: 10), log.text)
        XCTAssertEqual(fake.locked { fake.opens }, 1)
        XCTAssertTrue(waitUntil(10) {
            sink.play(.grant)
            sleepThread(milliseconds: 20)
            return log.text.contains("beep: played")
        }, log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(fake.locked { fake.opens }, 2)
        XCTAssertEqual(log.all.filter { $0.hasPrefix("<4>") }.count, 1, log.text)
    }

    func testNewEventCutsTheBeepShortWithoutClickAndWithoutBacklog() {
        let fake = FakeALSA()
        fake.paced = true
        var s = settings(good: "1000:5000")
        s.error = BeepPattern.defaultError
        let (sink, log) = makeSink(fake, s)
        sink.play(.grant)
        XCTAssertTrue(waitUntil(10) { fake.writtenFrames > 2_000 })
        for _ in 0..<5 { sink.play(.deny) }
        XCTAssertTrue(log.wait(for: "beep: played \(BeepPattern.defaultError)", within: 10), log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertTrue(log.text.contains("beep: 1000:5000 cut short"), log.text)
        XCTAssertEqual(log.all.filter { $0.contains("beep: played") }.count, 1, "no backlog: \(log.text)")
        let samples = fake.locked { fake.written }
        XCTAssertLessThan(samples.count, 48 * 5000, "the long beep was cut")
        // No click: no step between neighbouring samples is larger than the 1000 Hz sine's own slope.
        let maxStep = zip(samples, samples.dropFirst()).map { abs(Int($1) - Int($0)) }.max() ?? 0
        XCTAssertLessThanOrEqual(Double(maxStep), 2 * Double.pi * 1000 / 48_000 * 0.5 * 32767 * 1.05)
    }

    func testCloseMidBeepStopsAndClosesPromptly() {
        let fake = FakeALSA()
        fake.paced = true
        let (sink, log) = makeSink(fake, settings(good: "440:5000,880:5000"))
        sink.play(.grant)
        XCTAssertTrue(waitUntil(10) { fake.writtenFrames > 1_000 })
        let closed = expectation(description: "close returns")
        DispatchQueue.global().async { sink.close(deadline: .now().adding(milliseconds: 2000)); closed.fulfill() }
        wait(for: [closed], timeout: 2 + 3)
        XCTAssertEqual(fake.locked { fake.closes }, 1)
        XCTAssertLessThan(fake.writtenFrames, 48 * 10_000)
        XCTAssertTrue(log.text.contains("cut short"), log.text)
        sink.play(.grant)  // after close: ignored, no crash
        sink.close(deadline: .now().adding(milliseconds: 2000))          // twice: nothing
        XCTAssertEqual(fake.locked { fake.opens }, 1)
    }

    func testStereoOnlyDeviceGetsTheToneOnBothChannels() throws {
        let fake = FakeALSA()
        fake.monoRefused = true
        let device = try PCMDevice(name: "fake", calls: fake)
        XCTAssertEqual(device.channels, 2)
        let mono: [Int16] = [1, -2, 3]
        XCTAssertEqual(try device.write(mono[...]), 3)
        XCTAssertEqual(fake.locked { fake.written }, [1, 1, -2, -2, 3, 3])
    }

    func testOtherDeviceRateIsRenderedAtThatRate() {
        let fake = FakeALSA()
        fake.rate = 44_100
        let (sink, log) = makeSink(fake, settings(good: "2000:100"))
        sink.play(.grant)
        XCTAssertTrue(log.wait(for: "beep: played", within: 10), log.text)
        sink.close(deadline: .now().adding(milliseconds: 2000))
        let tones = SoundSignalAnalysis.tones(fake.locked { fake.written }, rate: 44_100)
        XCTAssertEqual(tones.count, 1)
        XCTAssertEqual(tones.first?.hertz ?? 0, 2000, accuracy: 40)
        XCTAssertEqual(tones.first?.milliseconds ?? 0, 100, accuracy: 10)
    }

    func testOpenFailureMessageNamesCallDeviceAndALSAText() {
        let fake = FakeALSA()
        fake.openCodes = [-ENOENT]
        XCTAssertThrowsError(try PCMDevice(name: "hw:7", calls: fake)) { error in
            XCTAssertEqual("\(error)", "snd_pcm_open hw:7: No such file or directory (-2)")
        }
    }
}

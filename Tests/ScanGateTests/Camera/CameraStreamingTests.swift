#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform
import XCTest
@testable import Camera
import Settings

/// The buffer lifecycle, drain-to-newest, timestamps, loss and reopen, through the fake device.
final class CameraStreamingTests: XCTestCase {
    let width = 16, height = 4

    func makeCamera(_ fake: FakeV4L2Device, buffers: Int = 3, logs: LogCapture = LogCapture()) -> V4L2Camera {
        var s = CaptureSettings()
        s.width = width
        s.height = height
        s.buffers = buffers
        s.frameTimeoutMs = 500
        return V4L2Camera(device: "/dev/v4l/by-id/usb-Fake-video-index0", settings: s, logger: logs.logger, calls: fake)
    }

    func greyDevice() -> FakeV4L2Device {
        FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: width, height: height)])])
    }

    func image(_ seed: Int) -> [UInt8] { CameraTestImage.pattern(width: width, height: height, seed: seed) }

    func testOpenQueuesEveryBufferThenStreams() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake, buffers: 4)
        try cam.open()
        XCTAssertEqual(fake.requestedBufferCount, 4)
        XCTAssertEqual(fake.mappedCount, 4)
        XCTAssertEqual(fake.queuedIndexes, [0, 1, 2, 3])
        XCTAssertTrue(fake.streaming)
        XCTAssertEqual(fake.log.filter { $0.hasPrefix("QBUF") || $0 == "STREAMON" },
                       ["QBUF 0", "QBUF 1", "QBUF 2", "QBUF 3", "STREAMON"])
        XCTAssertTrue(cam.isLive)
        XCTAssertTrue(cam.isReconnectable)
        XCTAssertEqual(cam.name, "/dev/v4l/by-id/usb-Fake-video-index0")
        cam.close()
    }

    func testFrameCarriesDriverSequenceAndTimestampAndItsBufferIsRequeued() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        XCTAssertTrue(fake.deliver(image(1), sequence: 41, timestampNanoseconds: 12_345_678_000))
        let before = MonotonicInstant.now()
        let frame = try XCTUnwrap(try cam.nextFrame())
        XCTAssertEqual(frame.sequence, 41)
        XCTAssertEqual(frame.captureTime, MonotonicInstant(nanoseconds: 12_345_678_000))
        XCTAssertGreaterThanOrEqual(frame.dequeuedAt, before)
        XCTAssertEqual(frame.luma, image(1))
        XCTAssertEqual(Set(fake.queuedIndexes), [0, 1, 2], "the buffer went back to the driver at once")
        cam.close()
    }

    func testDrainReturnsTheNewestOfThreeReadyBuffersAndRequeuesTheOlderTwo() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        for seed in 1...3 { XCTAssertTrue(fake.deliver(image(seed), sequence: UInt32(seed + 9))) }
        let frame = try XCTUnwrap(try cam.nextFrame())
        XCTAssertEqual(frame.sequence, 12)
        XCTAssertEqual(frame.luma, image(3))
        XCTAssertEqual(cam.skippedFrames, 2)
        let streamLog = fake.log.drop { !$0.hasPrefix("DQBUF") }
        XCTAssertEqual(Array(streamLog), ["DQBUF 0", "DQBUF 1", "QBUF 0", "DQBUF 2", "QBUF 1", "QBUF 2"])
        XCTAssertEqual(Set(fake.queuedIndexes), [0, 1, 2])
        // The next frame is newer still: never one the drain already passed.
        XCTAssertTrue(fake.deliver(image(4), sequence: 13))
        XCTAssertEqual(try cam.nextFrame()?.sequence, 13)
        cam.close()
    }

    func testWallClockStampedBuffersFallBackToDequeueTime() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.deliver(image(1), timestampNanoseconds: 5_000_000_000, flags: UInt32(V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN))
        let frame = try XCTUnwrap(try cam.nextFrame())
        XCTAssertEqual(frame.captureTime, frame.dequeuedAt)
        cam.close()
    }

    func testBufferFlaggedCorruptIsSkippedAndTheNextFrameReturned() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.deliver(image(1), sequence: 1, flags: UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) | UInt32(V4L2_BUF_FLAG_ERROR))
        var polls = 0
        fake.onPoll = { device in
            polls += 1
            if polls == 2 { device.deliver(self.image(2), sequence: 2) }
        }
        let frame = try XCTUnwrap(try cam.nextFrame())
        XCTAssertEqual(frame.sequence, 2)
        XCTAssertEqual(frame.luma, image(2))
        XCTAssertEqual(Set(fake.queuedIndexes), [0, 1, 2])
        cam.close()
    }

    func testNoFrameInTimeIsTimeout() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.timeout(let device, let ms)? = error as? CaptureError else {
                return XCTFail("not timeout: \(error)")
            }
            XCTAssertEqual(device, "/dev/v4l/by-id/usb-Fake-video-index0")
            XCTAssertEqual(ms, 500)
        }
        cam.close()
    }

    func testTimeoutOnADeviceThatNoLongerAnswersIsDeviceLost() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.failures[.queryCapability] = .noDevice
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.deviceLost(_, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertTrue(reason.contains("ENODEV"), reason)
        }
        cam.close()
    }

    func testENODEVFromDQBUFIsDeviceLostAndCloseStillReleasesEverything() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.deliver(image(1))
        fake.failures[.dequeueBuffer] = .noDevice
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.deviceLost(let device, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertEqual(device, "/dev/v4l/by-id/usb-Fake-video-index0")
            XCTAssertTrue(reason.contains("VIDIOC_DQBUF") && reason.contains("ENODEV"), reason)
        }
        fake.gone = true  // every call now fails as on an unplugged camera
        cam.close()
        XCTAssertEqual(fake.mappedCount, 0, "every buffer unmapped")
        XCTAssertTrue(fake.openDescriptors.isEmpty, "descriptor closed")
        XCTAssertEqual(Array(fake.log.suffix(4)), ["munmap 0", "munmap 1", "munmap 2", "close"])
        cam.close()  // twice is harmless
        XCTAssertEqual(fake.log.filter { $0 == "close" }.count, 1)
    }

    func testEIOFromDQBUFIsDeviceLost() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.deliver(image(1))
        fake.failures[.dequeueBuffer] = .ioError
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.deviceLost(_, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertTrue(reason.contains("EIO"), reason)
        }
        cam.close()
        XCTAssertEqual(fake.mappedCount, 0)
    }

    func testPollErrorIsDeviceLost() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.gone = true
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.deviceLost(_, let reason)? = error as? CaptureError else {
                return XCTFail("not deviceLost: \(error)")
            }
            XCTAssertTrue(reason.contains("poll reported an error"), reason)
        }
        cam.close()
        XCTAssertEqual(fake.mappedCount, 0)
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testReopenAfterLossWorksOnceTheDeviceReturns() throws {
        let fake = greyDevice()
        let cam = makeCamera(fake)
        try cam.open()
        fake.deliver(image(1), sequence: 100)
        XCTAssertEqual(try cam.nextFrame()?.sequence, 100)

        // Unplugged: the capture thread closes, then tries to open again while it is missing.
        fake.gone = true
        XCTAssertThrowsError(try cam.nextFrame())
        cam.close()
        XCTAssertThrowsError(try cam.open()) { error in
            guard case CaptureError.deviceLost? = error as? CaptureError else { return XCTFail("\(error)") }
        }

        // Plugged back in: open works and frames flow with the new stream's sequence numbers.
        fake.gone = false
        try cam.open()
        XCTAssertEqual(fake.queuedIndexes, [0, 1, 2])
        fake.deliver(image(2), sequence: 0)
        let frame = try XCTUnwrap(try cam.nextFrame())
        XCTAssertEqual(frame.sequence, 0)
        XCTAssertEqual(frame.luma, image(2))
        cam.close()
        XCTAssertEqual(fake.mappedCount, 0)
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }

    func testNextFrameOnAClosedCameraIsDeviceLost() {
        let cam = makeCamera(greyDevice())
        XCTAssertThrowsError(try cam.nextFrame()) { error in
            guard case CaptureError.deviceLost? = error as? CaptureError else { return XCTFail("\(error)") }
        }
    }
}

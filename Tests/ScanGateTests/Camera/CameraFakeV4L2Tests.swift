#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform
import XCTest
@testable import Camera

/// A scripted V4L2 capture device behind the `V4L2Calls` seam: formats with sizes and rates, controls,
/// mmap buffers in memory with the kernel's queued → ready → dequeued cycle, and a ready queue the test
/// fills with `deliver`. It answers like the kernel does (EINVAL past the end of an enumeration, EAGAIN
/// from DQBUF on the non-blocking descriptor, POLLERR on a dead device) and never waits: a poll with
/// nothing ready is a timeout at once.
final class FakeV4L2Device: V4L2Calls {
    struct Format {
        var fourcc: FourCC
        var sizes: [FrameSize]
        var rates: [Double] = [30, 15]
        /// Bytes added to the end of every row (stride padding).
        var padding: Int = 0
    }

    struct Control {
        var id: UInt32
        var name: String
        var type: v4l2_ctrl_type = V4L2_CTRL_TYPE_INTEGER
        var minimum: Int32
        var maximum: Int32
        var step: Int32 = 1
        var defaultValue: Int32
        var value: Int32
        var flags: UInt32 = 0
    }

    enum BufferState: Equatable { case idle, queued, ready, dequeued }

    struct Buffer {
        var length: Int
        var offset: UInt32
        var state: BufferState = .idle
        var memory: UnsafeMutableRawPointer?
    }

    struct Delivery {
        var index: Int
        var sequence: UInt32
        var timestamp: timeval
        var bytesUsed: Int
        var flags: UInt32
    }

    // MARK: script
    var exists = true
    var gone = false
    var capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
    var formats: [Format]
    var controls: [Control] = []
    var enumeratesSizes = true
    var rateSettable = true
    /// Errors to return for a request (checked before anything else).
    var failures: [V4L2Request: Errno] = [:]
    var pollFailure: Errno?
    /// Called at each poll before the ready queue is looked at: the test's "camera" produces frames here.
    var onPoll: ((FakeV4L2Device) -> Void)?

    // MARK: state
    private(set) var openDescriptors: Set<Int32> = []
    private var nextDescriptor: Int32 = 10
    private(set) var current: (fourcc: FourCC, width: Int, height: Int, bytesPerLine: Int, sizeImage: Int)
    private(set) var fps: Double = 30
    private(set) var buffers: [Buffer] = []
    private var queueOrder: [Int] = []
    private var ready: [Delivery] = []
    private(set) var streaming = false
    private(set) var requestedBufferCount = 0
    /// Every call, in order: "open", "QBUF 1", "DQBUF 2", "STREAMON", "munmap 0", "S_CTRL gain=5", "close".
    private(set) var log: [String] = []
    var nextSequence: UInt32 = 0

    init(formats: [Format]) {
        self.formats = formats
        let f = formats.first
        let w = f?.sizes.first?.width ?? 640, h = f?.sizes.first?.height ?? 480
        current = (f?.fourcc ?? .grey, w, h, w, w * h)
    }

    var mappedCount: Int { buffers.filter { $0.memory != nil }.count }
    var queuedIndexes: [Int] { buffers.indices.filter { buffers[$0].state == .queued } }

    /// Puts `bytes` into the oldest queued buffer and makes it ready. False when no buffer is queued.
    @discardableResult
    func deliver(_ bytes: [UInt8], sequence: UInt32? = nil, timestampNanoseconds: UInt64 = 1_000_000_000,
                 flags: UInt32 = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)) -> Bool {
        guard streaming, let index = queueOrder.first, let memory = buffers[index].memory else { return false }
        queueOrder.removeFirst()
        let count = min(bytes.count, buffers[index].length)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: count) }
        buffers[index].state = .ready
        let seq = sequence ?? nextSequence
        nextSequence = seq &+ 1
        let ts = timeval(tv_sec: Int(timestampNanoseconds / 1_000_000_000),
                         tv_usec: Int(timestampNanoseconds % 1_000_000_000 / 1000))
        ready.append(Delivery(index: index, sequence: seq, timestamp: ts, bytesUsed: count, flags: flags))
        return true
    }

    // MARK: V4L2Calls

    func open(_ path: String) -> Result<Int32, Errno> {
        log.append("open \(path)")
        guard exists, !gone else { return .failure(.noSuchFile) }
        let fd = nextDescriptor
        nextDescriptor += 1
        openDescriptors.insert(fd)
        return .success(fd)
    }

    func close(_ fd: Int32) -> Result<Void, Errno> {
        log.append("close")
        guard openDescriptors.remove(fd) != nil else { return .failure(Errno(rawValue: EBADF)) }
        // Closing the last descriptor stops streaming and frees the buffers (mappings stay valid).
        streaming = false
        queueOrder.removeAll()
        ready.removeAll()
        for i in buffers.indices { buffers[i].state = .idle }
        buffers.removeAll { $0.memory == nil }
        return .success(())
    }

    func mmap(_ fd: Int32, length: Int, offset: Int64) -> Result<UnsafeRawPointer, Errno> {
        guard !gone else { return .failure(.noDevice) }
        guard openDescriptors.contains(fd),
              let index = buffers.firstIndex(where: { Int64($0.offset) == offset && $0.length == length }),
              buffers[index].memory == nil else { return .failure(.invalidArgument) }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        buffers[index].memory = memory
        log.append("mmap \(index)")
        return .success(UnsafeRawPointer(memory))
    }

    func munmap(_ address: UnsafeRawPointer, length: Int) -> Result<Void, Errno> {
        guard let index = buffers.firstIndex(where: { $0.memory.map(UnsafeRawPointer.init) == address }) else {
            return .failure(.invalidArgument)
        }
        buffers[index].memory?.deallocate()
        buffers[index].memory = nil
        log.append("munmap \(index)")
        return .success(())
    }

    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        onPoll?(self)
        if let pollFailure { return .failure(pollFailure) }
        if gone { return .success(Int16(POLLERR | POLLHUP)) }
        if !streaming { return .success(Int16(POLLERR)) }
        return .success(ready.isEmpty ? 0 : Int16(POLLIN))
    }

    func ioctl(_ fd: Int32, _ request: V4L2Request, _ argument: UnsafeMutableRawPointer) -> Result<Void, Errno> {
        guard openDescriptors.contains(fd) else { return .failure(Errno(rawValue: EBADF)) }
        if gone { return .failure(.noDevice) }
        if let failure = failures[request] { return .failure(failure) }
        switch request {
        case .queryCapability:
            let cap = argument.assumingMemoryBound(to: v4l2_capability.self)
            cap.pointee = v4l2_capability()
            setCString(&cap.pointee.driver, "fake")
            setCString(&cap.pointee.card, "Fake Camera")
            setCString(&cap.pointee.bus_info, "platform:fake")
            cap.pointee.capabilities = capabilities | UInt32(V4L2_CAP_DEVICE_CAPS)
            cap.pointee.device_caps = capabilities
        case .enumerateFormat:
            let d = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let index = Int(d.pointee.index)
            guard d.pointee.type == V4L2Device.captureType, index < formats.count else { return .failure(.invalidArgument) }
            d.pointee.pixelformat = formats[index].fourcc.rawValue
            d.pointee.flags = formats[index].fourcc == .mjpg ? UInt32(V4L2_FMT_FLAG_COMPRESSED) : 0
            setCString(&d.pointee.description, "Fake \(formats[index].fourcc)")
        case .enumerateFrameSizes:
            let e = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard enumeratesSizes, let f = format(e.pointee.pixel_format), Int(e.pointee.index) < f.sizes.count else {
                return .failure(.invalidArgument)
            }
            e.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
            e.pointee.discrete.width = UInt32(f.sizes[Int(e.pointee.index)].width)
            e.pointee.discrete.height = UInt32(f.sizes[Int(e.pointee.index)].height)
        case .enumerateFrameIntervals:
            let e = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
            guard enumeratesSizes, let f = format(e.pointee.pixel_format),
                  f.sizes.contains(FrameSize(width: Int(e.pointee.width), height: Int(e.pointee.height))),
                  Int(e.pointee.index) < f.rates.count else { return .failure(.invalidArgument) }
            e.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            e.pointee.discrete = FormatNegotiation.interval(fps: f.rates[Int(e.pointee.index)])
        case .getFormat:
            writeCurrentFormat(argument.assumingMemoryBound(to: v4l2_format.self))
        case .setFormat:
            if streaming || !buffers.isEmpty { return .failure(.busy) }
            let f = argument.assumingMemoryBound(to: v4l2_format.self)
            let chosen = format(f.pointee.fmt.pix.pixelformat) ?? formats[0]
            let wanted = FrameSize(width: Int(f.pointee.fmt.pix.width), height: Int(f.pointee.fmt.pix.height))
            let size = chosen.sizes.contains(wanted) ? wanted : chosen.sizes[0]
            let bytesPerPixel = [FourCC.yuyv, .uyvy].contains(chosen.fourcc) ? 2 : [FourCC.rgb3, .bgr3].contains(chosen.fourcc) ? 3 : 1
            let bpl = chosen.fourcc == .mjpg ? 0 : size.width * bytesPerPixel + chosen.padding
            let planes = [FourCC.nv12, .yu12, .yv12].contains(chosen.fourcc) ? 3 : 2
            let image = chosen.fourcc == .mjpg ? size.width * size.height * 2 + 4096 : bpl * size.height * planes / 2
            current = (chosen.fourcc, size.width, size.height, bpl, image)
            if !chosen.rates.contains(fps) { fps = chosen.rates.first ?? 30 }
            writeCurrentFormat(f)
            log.append("S_FMT \(chosen.fourcc) \(size)")
        case .getParameters, .setParameters:
            let p = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            if request == .setParameters, rateSettable, let wanted = FrameRates.fps(p.pointee.parm.capture.timeperframe) {
                let rates = format(current.fourcc.rawValue)?.rates ?? [30]
                fps = rates.min { abs($0 - wanted) < abs($1 - wanted) } ?? fps
                log.append("S_PARM \(FrameRates.text(fps))")
            }
            p.pointee.parm.capture.capability = rateSettable ? UInt32(V4L2_CAP_TIMEPERFRAME) : 0
            p.pointee.parm.capture.timeperframe = FormatNegotiation.interval(fps: fps)
        case .requestBuffers:
            let r = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard r.pointee.memory == V4L2Device.mmapMemory else { return .failure(.invalidArgument) }
            if streaming { return .failure(.busy) }
            if buffers.contains(where: { $0.memory != nil }) { return .failure(.busy) }
            requestedBufferCount = Int(r.pointee.count)
            buffers = (0..<Int(r.pointee.count)).map {
                Buffer(length: max(current.sizeImage, 1), offset: UInt32($0) * 0x10000)
            }
            log.append("REQBUFS \(r.pointee.count)")
        case .queryBuffer:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(b.pointee.index)
            guard buffers.indices.contains(index) else { return .failure(.invalidArgument) }
            b.pointee.length = UInt32(buffers[index].length)
            b.pointee.m.offset = buffers[index].offset
        case .queueBuffer:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(b.pointee.index)
            guard buffers.indices.contains(index), buffers[index].state == .idle || buffers[index].state == .dequeued else {
                return .failure(.invalidArgument)
            }
            buffers[index].state = .queued
            queueOrder.append(index)
            log.append("QBUF \(index)")
        case .dequeueBuffer:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard streaming else { return .failure(.invalidArgument) }
            guard !ready.isEmpty else { return .failure(.wouldBlock) }
            let d = ready.removeFirst()
            buffers[d.index].state = .dequeued
            b.pointee.index = UInt32(d.index)
            b.pointee.bytesused = UInt32(d.bytesUsed)
            b.pointee.sequence = d.sequence
            b.pointee.timestamp = d.timestamp
            b.pointee.flags = d.flags
            b.pointee.length = UInt32(buffers[d.index].length)
            log.append("DQBUF \(d.index)")
        case .streamOn:
            streaming = true
            log.append("STREAMON")
        case .streamOff:
            streaming = false
            queueOrder.removeAll()
            ready.removeAll()
            for i in buffers.indices { buffers[i].state = .idle }
            log.append("STREAMOFF")
        case .queryControl:
            let q = argument.assumingMemoryBound(to: v4l2_queryctrl.self)
            let next = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            let control: Control?
            if q.pointee.id & next != 0 {
                let after = q.pointee.id & ~next
                control = controls.filter { $0.id > after }.min { $0.id < $1.id }
            } else {
                control = controls.first { $0.id == q.pointee.id }
            }
            guard let c = control else { return .failure(.invalidArgument) }
            q.pointee = v4l2_queryctrl()
            q.pointee.id = c.id
            q.pointee.type = c.type.rawValue
            setCString(&q.pointee.name, c.name)
            q.pointee.minimum = c.minimum
            q.pointee.maximum = c.maximum
            q.pointee.step = c.step
            q.pointee.default_value = c.defaultValue
            q.pointee.flags = c.flags
        case .getControl, .setControl:
            let c = argument.assumingMemoryBound(to: v4l2_control.self)
            guard let i = controls.firstIndex(where: { $0.id == c.pointee.id }) else { return .failure(.invalidArgument) }
            if request == .getControl {
                c.pointee.value = controls[i].value
            } else {
                guard (controls[i].minimum...controls[i].maximum).contains(c.pointee.value) else {
                    return .failure(Errno(rawValue: ERANGE))
                }
                controls[i].value = c.pointee.value
                log.append("S_CTRL \(ControlInfo.normalise(controls[i].name))=\(c.pointee.value)")
            }
        }
        return .success(())
    }

    private func format(_ raw: UInt32) -> Format? { formats.first { $0.fourcc.rawValue == raw } }

    private func writeCurrentFormat(_ f: UnsafeMutablePointer<v4l2_format>) {
        f.pointee.fmt.pix.pixelformat = current.fourcc.rawValue
        f.pointee.fmt.pix.width = UInt32(current.width)
        f.pointee.fmt.pix.height = UInt32(current.height)
        f.pointee.fmt.pix.bytesperline = UInt32(current.bytesPerLine)
        f.pointee.fmt.pix.sizeimage = UInt32(current.sizeImage)
        f.pointee.fmt.pix.field = V4L2_FIELD_NONE.rawValue
    }

    deinit {
        for b in buffers { b.memory?.deallocate() }
    }
}

private func setCString<T>(_ field: inout T, _ text: String) {
    withUnsafeMutableBytes(of: &field) { raw in
        let bytes = Array(text.utf8.prefix(raw.count - 1))
        for i in 0..<raw.count { raw[i] = i < bytes.count ? bytes[i] : 0 }
    }
}

/// Test pictures and the byte layouts a camera would put them in.
enum CameraTestImage {
    /// A luma pattern where every pixel differs from its neighbours.
    static func pattern(width: Int, height: Int, seed: Int = 0) -> [UInt8] {
        (0..<(width * height)).map { i in UInt8(truncatingIfNeeded: (i % width) * 7 + (i / width) * 13 + seed * 31) }
    }

    /// GREY / Y plane rows with `padding` junk bytes after each.
    static func grey(_ luma: [UInt8], width: Int, padding: Int) -> [UInt8] {
        var out: [UInt8] = []
        for row in 0..<(luma.count / width) {
            out += luma[(row * width)..<((row + 1) * width)]
            out += [UInt8](repeating: 0xEE, count: padding)
        }
        return out
    }

    /// YUYV (uyvy: false) or UYVY with chroma bytes 0x11/0x22 and `padding` junk bytes per row.
    static func packed422(_ luma: [UInt8], width: Int, padding: Int, uyvy: Bool) -> [UInt8] {
        var out: [UInt8] = []
        for row in 0..<(luma.count / width) {
            for x in stride(from: 0, to: width, by: 2) {
                let y0 = luma[row * width + x], y1 = luma[row * width + x + 1]
                out += uyvy ? [0x11, y0, 0x22, y1] : [y0, 0x11, y1, 0x22]
            }
            out += [UInt8](repeating: 0xEE, count: padding)
        }
        return out
    }

    /// NV12: the Y plane (padded rows) then the interleaved UV plane (half height, same stride).
    static func nv12(_ luma: [UInt8], width: Int, padding: Int) -> [UInt8] {
        let height = luma.count / width
        return grey(luma, width: width, padding: padding)
            + [UInt8](repeating: 0x33, count: (width + padding) * height / 2)
    }
}

final class CameraFakeV4L2Tests: XCTestCase {
    func testFakeAnswersLikeTheKernel() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 8, height: 2)])])
        let device = try V4L2Device.open("/dev/video9", calls: fake).get()
        XCTAssertEqual(try device.formats().map(\.fourcc), [.grey])
        XCTAssertEqual(try device.frameSizes(.grey), .discrete([FrameSize(width: 8, height: 2)]))
        XCTAssertEqual(try device.frameRates(.grey, FrameSize(width: 8, height: 2)), .discrete([30, 15]))
        let buffers = CaptureBuffers(device: device)
        XCTAssertEqual(try buffers.allocate(count: 2), 2)
        try buffers.queueAll()
        try device.streamOn().get()
        XCTAssertNil(try buffers.dequeue(), "an empty ready queue is EAGAIN, not an error")
        buffers.unmapAll(logger: Logger(level: .error))
        XCTAssertEqual(fake.mappedCount, 0)
        _ = device.close()
        XCTAssertTrue(fake.openDescriptors.isEmpty)
    }
}

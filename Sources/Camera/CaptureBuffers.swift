#if canImport(Glibc)
import Glibc
#endif
import CV4L2
import Core
import Platform

/// The driver's mmap'd capture buffers: the one owner of each mapping. A buffer is either queued to the
/// driver or held by ScanGate for the moment it takes to copy the luma out; `unmapAll` releases every
/// mapping exactly once, whatever state the device is in.
final class CaptureBuffers {
    struct Mapping {
        let address: UnsafeRawPointer
        let length: Int
        var queued: Bool
    }

    let device: V4L2Device
    private(set) var mappings: [Mapping] = []

    init(device: V4L2Device) { self.device = device }

    /// REQBUFS `count` mmap buffers (the driver may give a few more or fewer), then QUERYBUF and mmap each.
    /// On failure, what was mapped stays recorded so `unmapAll` releases it.
    func allocate(count: Int) throws(SystemError) -> Int {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = V4L2Device.captureType
        request.memory = V4L2Device.mmapMemory
        let granted = Int(try device.ioctl(.requestBuffers, request).get().count)
        guard granted > 0 else { throw SystemError("VIDIOC_REQBUFS (no buffers granted)", device.path, Errno(rawValue: ENOMEM)) }
        for index in 0..<granted {
            var b = v4l2_buffer()
            b.index = UInt32(index)
            b.type = V4L2Device.captureType
            b.memory = V4L2Device.mmapMemory
            let info = try device.ioctl(.queryBuffer, b).get()
            let length = Int(info.length)
            let address = try device.calls.mmap(device.fd, length: length, offset: Int64(info.m.offset))
                .mapError { SystemError("mmap buffer \(index)", device.path, $0) }.get()
            mappings.append(Mapping(address: address, length: length, queued: false))
        }
        return granted
    }

    func queue(_ index: Int) throws(SystemError) {
        var b = v4l2_buffer()
        b.index = UInt32(index)
        b.type = V4L2Device.captureType
        b.memory = V4L2Device.mmapMemory
        _ = try device.ioctl(.queueBuffer, b).get()
        mappings[index].queued = true
    }

    func queueAll() throws(SystemError) {
        for index in mappings.indices where !mappings[index].queued { try queue(index) }
    }

    /// One filled buffer, or nil when none is ready (EAGAIN on the non-blocking descriptor).
    /// A buffer index the driver should not have given is reported as an I/O error.
    func dequeue() throws(SystemError) -> v4l2_buffer? {
        var b = v4l2_buffer()
        b.type = V4L2Device.captureType
        b.memory = V4L2Device.mmapMemory
        switch device.ioctl(.dequeueBuffer, b) {
        case .success(let filled):
            let index = Int(filled.index)
            guard mappings.indices.contains(index) else {
                throw SystemError("VIDIOC_DQBUF (buffer index \(index) out of range)", device.path, .ioError)
            }
            mappings[index].queued = false
            return filled
        case .failure(let e) where e.errno == .wouldBlock:
            return nil
        case .failure(let e):
            throw e
        }
    }

    /// The bytes the driver filled in buffer `index` (bytesused, or the whole buffer when it says 0).
    func bytes(of buffer: v4l2_buffer) -> UnsafeRawBufferPointer {
        let mapping = mappings[Int(buffer.index)]
        let used = buffer.bytesused == 0 ? mapping.length : min(Int(buffer.bytesused), mapping.length)
        return UnsafeRawBufferPointer(start: mapping.address, count: used)
    }

    /// munmap every buffer once; failures are logged, never fatal (the device may be gone).
    func unmapAll(logger: Logger) {
        for (index, mapping) in mappings.enumerated() {
            if case .failure(let e) = device.calls.munmap(mapping.address, length: mapping.length) {
                logger.warning("camera \(device.path): munmap buffer \(index): \(e)")
            }
        }
        mappings.removeAll()
    }
}

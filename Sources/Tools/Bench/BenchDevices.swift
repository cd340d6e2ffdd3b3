import CShim
import Core
import Platform
import Serial
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real pseudo-terminal whose far end is read by a thread that stamps the arrival of each frame
/// (CR LF terminated): the serial output writes to it exactly as to a USB adapter.
final class TimedSerialPeer: @unchecked Sendable {
    let name: String
    private let controller: Int32
    private let device: Int32
    private final class Recorder: Sendable {
        let arrivals = PosixMutex<[MonotonicInstant]>([])
        let stop = Atomic<Bool>(false)
    }
    private let recorder = Recorder()
    private var thread: PosixThread?

    init() throws {
        var c: Int32 = -1, d: Int32 = -1
        var buffer = [CChar](repeating: 0, count: 128)
        guard shim_openpty(&c, &d, &buffer, buffer.count) == 0 else { throw SystemError("openpty", "bench serial peer", .current) }
        controller = c
        device = d
        name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fd = c
        let recorder = self.recorder
        thread = try PosixThread(name: "bench-serial") {
            var chunk = [UInt8](repeating: 0, count: 4096)
            var previous: UInt8 = 0
            while !recorder.stop.load(ordering: .relaxed) {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 50) > 0 else { continue }
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { continue }
                let now = MonotonicInstant.now()
                for b in chunk[0..<n] {
                    if previous == 0x0D && b == 0x0A { recorder.arrivals.withLock { $0.append(now) } }
                    previous = b
                }
            }
        }
    }

    var frameArrivals: [MonotonicInstant] { recorder.arrivals.withLock { $0 } }

    func close() {
        recorder.stop.store(true, ordering: .relaxed)
        thread?.join()
        Glibc.close(controller)
        Glibc.close(device)
    }
}

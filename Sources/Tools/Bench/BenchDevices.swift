import CShim
import Core
import GPIO
import Platform
import Serial
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An in-memory GPIO chip ("bench-chip", lines GPIO0…GPIO7) behind the gpiod seam, recording when each
/// line was set: the bench has no GPIO hardware, so it measures ScanGate's own path up to the
/// gpiod_line_set_value call. (The real driver is exercised by the hardware-in-the-loop suite.)
final class TimedGpiod: GpiodCalls {
    struct Set { var at: MonotonicInstant; var offset: Int; var value: Int32 }
    private let sets = PosixMutex<[Set]>([])
    private let chip = GpiodChipHandle(address: 1)

    var recorded: [Set] { sets.withLock { $0 } }

    func chipPaths() -> [String] { ["/dev/gpiochip-bench"] }
    func openChip(path: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    func openChip(name: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    func openChip(label: String) -> Result<GpiodChipHandle, Errno> { label == "bench-chip" ? .success(chip) : .failure(.noSuchFile) }
    func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    func closeChip(_ chip: GpiodChipHandle) {}
    func chipName(_ chip: GpiodChipHandle) -> String { "gpiochip-bench" }
    func chipLabel(_ chip: GpiodChipHandle) -> String { "bench-chip" }
    func numLines(_ chip: GpiodChipHandle) -> Int { 8 }
    func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        (0..<8).contains(offset) ? .success(GpiodLineHandle(address: UInt(100 + offset))) : .failure(.invalidArgument)
    }
    func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        guard name.hasPrefix("GPIO"), let n = Int(name.dropFirst(4)), (0..<8).contains(n) else { return .failure(.noSuchFile) }
        return .success(GpiodLineHandle(address: UInt(100 + n)))
    }
    func lineName(_ line: GpiodLineHandle) -> String? { "GPIO\(line.address - 100)" }
    func lineConsumer(_ line: GpiodLineHandle) -> String? { nil }
    func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32) -> Result<Void, Errno> {
        .success(())
    }
    func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno> {
        let now = MonotonicInstant.now()
        sets.withLock { $0.append(Set(at: now, offset: Int(line.address) - 100, value: value)) }
        return .success(())
    }
    func release(_ line: GpiodLineHandle) {}
}

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

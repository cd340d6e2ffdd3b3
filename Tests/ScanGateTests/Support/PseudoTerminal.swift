#if canImport(Glibc)
import Glibc
#endif
import CShim
import Platform

/// A real pseudo-terminal pair: the code under test opens `name` (the device side) like a tty;
/// the test reads what arrives on the controller side, always with a deadline.
final class PseudoTerminal {
    private(set) var controller: Int32
    /// Kept open so the pair stays up while the code under test closes and reopens its end.
    private(set) var device: Int32
    let name: String

    init() throws {
        var controller: Int32 = -1
        var device: Int32 = -1
        var buffer = [CChar](repeating: 0, count: 128)
        guard shim_openpty(&controller, &device, &buffer, buffer.count) == 0 else {
            throw SystemError("openpty", "", .current)
        }
        self.controller = controller
        self.device = device
        self.name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The device side's termios, read through the controller (Linux answers for the linked tty).
    func deviceAttributes() throws -> termios {
        var t = termios()
        guard tcgetattr(controller, &t) == 0 else { throw SystemError("tcgetattr", name, .current) }
        return t
    }

    /// Reads until `count` bytes arrived or `seconds` passed; returns what arrived.
    func read(count: Int, within seconds: Double = 10) -> [UInt8] {
        read(within: seconds) { $0.count >= count }
    }

    /// Reads until `done` holds for what arrived or `seconds` passed.
    func read(within seconds: Double = 10, until done: ([UInt8]) -> Bool) -> [UInt8] {
        let deadline = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(received) {
            let remaining = deadline.milliseconds(since: .now())
            guard remaining > 0 else { break }
            var entry = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&entry, 1, Int32(min(remaining, 200)))
            guard ready > 0, entry.revents & Int16(POLLIN) != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(controller, $0.baseAddress, $0.count) }
            if n > 0 { received += buffer[0..<n] }
        }
        return received
    }

    /// Reads whatever is buffered now, without waiting.
    func drain() -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var entry = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&entry, 1, 0) > 0, entry.revents & Int16(POLLIN) != 0 else { return received }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(controller, $0.baseAddress, $0.count) }
            guard n > 0 else { return received }
            received += buffer[0..<n]
        }
    }

    /// Stops output on the line (tcflow TCOOFF, as an XOFF from the peer would): writers find no room.
    func stopOutput() { tcflow(device, TCOOFF) }

    /// Lets output flow again (TCOON).
    func restartOutput() { tcflow(device, TCOON) }

    /// Closes the device side the test holds (then only the code under test keeps it open).
    func closeDevice() {
        if device >= 0 { Glibc.close(device); device = -1 }
    }

    /// Closes both sides the test holds: the code under test sees a hang-up (EIO), like an unplugged adapter.
    func hangUp() {
        closeDevice()
        if controller >= 0 { Glibc.close(controller); controller = -1 }
    }

    deinit { hangUp() }
}

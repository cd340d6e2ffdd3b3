import Foundation
import XCTest

/// A real sd_notify endpoint for tests: an AF_UNIX datagram socket bound in a temporary directory,
/// exported as NOTIFY_SOCKET (sd_notify reads the environment at each call). `close()` restores the env.
final class ServiceNotifySocket {
    let directory: String
    let path: String
    private let fd: Int32

    init() throws {
        directory = try TestFiles.temporaryDirectory()
        path = directory + "/notify"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        setenv("NOTIFY_SOCKET", path, 1)
    }

    /// The next datagram, or nil when none arrives before the deadline.
    func receive(timeoutSeconds: Double = 10) -> String? {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while true {
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            let n = poll(&entry, 1, remaining)
            if n > 0 { break }
            if n == 0 || (n < 0 && errno != EINTR) { return nil }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count >= 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// Every datagram already waiting, without blocking.
    func drain() -> [String] {
        var messages: [String] = []
        while let m = receive(timeoutSeconds: 0) { messages.append(m) }
        return messages
    }

    func close() {
        unsetenv("NOTIFY_SOCKET")
        unsetenv("WATCHDOG_USEC")
        unsetenv("WATCHDOG_PID")
        Glibc.close(fd)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Foundation
import Platform
import XCTest

/// A daemon on the simulated camera with one QR code in view, and `scangate preview` in front of it.
final class PreviewUnderTest {
    let daemon: DaemonUnderTest
    let preview: DaemonUnderTest
    let port: UInt16
    let socket: String

    /// `payload` is shown at `at` (module `module`) in a `size` frame; `extra` goes to `preview`.
    init(dir: String, size: String = "320x240", payload: String = "HELLO-PREVIEW", at: String = "100,60", module: Int = 4,
         extra: [String] = []) throws {
        let scenario = dir + "/preview.scenario"
        socket = dir + "/status.sock"
        try TestFiles.write("""
            size \(size)
            fps 20
            frames 1000000
            code qr "\(payload)" frames 0- at \(at) module \(module)
            """, to: scenario)
        daemon = try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--status-socket", socket])
        port = try PreviewHTTP.freePort()
        do {
            preview = try DaemonUnderTest(["preview", "--status-socket", socket, "--listen", "127.0.0.1:\(port)"] + extra)
        } catch {
            daemon.stop()
            throw error
        }
        let (daemon, preview) = (daemon, preview)
        guard waitUntil(20, failure: "the daemon decodes and preview serves: \(daemon.stderr) \(preview.stderr)", {
            daemon.stdout.contains { $0.contains(payload) } && preview.stderr.contains { $0.contains("serving http://") }
        }) else {
            stop()
            throw XCTSkip("no daemon or preview")
        }
    }

    func get(_ path: String, headers: [String] = []) -> PreviewHTTP.Answer? { PreviewHTTP.get(port: port, path, headers: headers) }

    /// `/clients.json`'s client count.
    func clients() -> Int? {
        guard let a = get("/clients.json"), a.status == 200,
              let json = try? JSONSerialization.jsonObject(with: Data(a.body)) as? [String: Any] else { return nil }
        return json["clients"] as? Int
    }

    /// The daemon's decoded-frame counter, asked through the preview's /status.json.
    func decodedFrames() -> Int? {
        guard let a = get("/status.json"), a.status == 200,
              let json = try? JSONSerialization.jsonObject(with: Data(a.body)) as? [String: Any],
              let frames = json["frames"] as? [String: Any] else { return nil }
        return frames["decoded"] as? Int
    }

    /// SIGTERM to both; the preview's exit status.
    @discardableResult
    func stop() -> Int32 {
        let status = preview.stop()
        daemon.stop()
        return status
    }
}

/// A plain HTTP/1.1 client over a socket, for the tests (the server under test is libmicrohttpd).
enum PreviewHTTP {
    struct Answer {
        var status: Int
        var head: String
        var body: [UInt8]
    }

    /// A port nothing listens on now (Support's FreePort).
    static func freePort() throws -> UInt16 { UInt16(try FreePort.make()) }

    /// A connected socket to 127.0.0.1:port, or -1.
    static func connect(port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); return -1 }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// Reads until end of file (or `limit` bytes, or the deadline); nil when nothing came.
    static func readAll(_ fd: Int32, seconds: Double = 10, limit: Int = 1 << 22) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
        while out.count < limit {
            let left = Int32(max(0, deadline.milliseconds(since: .now())))
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&p, 1, left) > 0 else { break }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            out += buffer[0..<n]
        }
        return out
    }

    static func parse(_ bytes: [UInt8]) -> Answer? {
        guard let end = bytes.indices.first(where: { i in i + 3 < bytes.count && bytes[i...(i + 3)].elementsEqual([13, 10, 13, 10]) }) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else { return nil }
        return Answer(status: status, head: head, body: Array(bytes[(end + 4)...]))
    }

    /// GET with Connection: close; the answer, or nil when the connection failed or closed without one.
    static func get(port: UInt16, _ path: String, headers: [String] = [], seconds: Double = 10) -> Answer? {
        let fd = connect(port: port)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let request = (["GET \(path) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"] + headers).joined(separator: "\r\n") + "\r\n\r\n"
        guard send(fd, Array(request.utf8)) else { return nil }
        return parse(readAll(fd, seconds: seconds))
    }
}

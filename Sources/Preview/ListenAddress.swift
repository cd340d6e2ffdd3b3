import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// `--listen HOST:PORT` (IPv4 `127.0.0.1:8470`, IPv6 `[::1]:8470`), and the socket bound to it.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public static let defaultText = "127.0.0.1:8470"
    public enum Host: Sendable, Equatable {
        case v4(UInt32)   // network byte order
        case v6([UInt8])  // 16 bytes
    }
    public let host: Host
    public let port: UInt16
    public let text: String

    public var description: String { text }

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        switch host {
        case .v4(let a): return UInt32(bigEndian: a) >> 24 == 127
        case .v6(let b): return b == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    public init(_ text: String) throws(UsageError) {
        let allowed = "allowed: IPV4:PORT such as 127.0.0.1:8470, or [IPV6]:PORT such as [::1]:8470"
        let hostText: String, portText: String
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw UsageError("--listen \(Logger.escapeControls(text)): not an address; \(allowed)")
            }
            hostText = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(close, offsetBy: 2)...])
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw UsageError("--listen \(Logger.escapeControls(text)): no port; \(allowed)")
            }
            hostText = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        }
        guard let port = UInt16(portText), port > 0 else {
            throw UsageError("--listen \(Logger.escapeControls(text)): the port must be 1 to 65535; \(allowed)")
        }
        if text.hasPrefix("[") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, hostText, &a) == 1 else {
                throw UsageError("--listen \(Logger.escapeControls(text)): \(Logger.escapeControls(hostText)) is not an IPv6 address; \(allowed)")
            }
            host = .v6(withUnsafeBytes(of: &a) { Array($0) })
        } else {
            var a = in_addr()
            guard inet_pton(AF_INET, hostText, &a) == 1 else {
                throw UsageError("--listen \(Logger.escapeControls(text)): \(Logger.escapeControls(hostText)) is not an IPv4 address "
                                 + "(host names are not looked up); \(allowed)")
            }
            host = .v4(a.s_addr)
        }
        self.port = port
        self.text = text
    }

    /// A listening TCP socket bound to the address (close-on-exec, SO_REUSEADDR), or the failing call with errno.
    public func bindListening(backlog: Int32 = 64) throws(SystemError) -> Int32 {
        let family = { switch host { case .v4: return AF_INET; case .v6: return AF_INET6 } }()
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", text, .current) }
        var one: Int32 = 1
        var rc = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard rc == 0 else {
            let e = Errno.current
            close(fd)
            throw SystemError("setsockopt SO_REUSEADDR", text, e)
        }
        switch host {
        case .v4(let a):
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr.s_addr = a
            rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        case .v6(let b):
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in for (i, v) in b.prefix(16).enumerated() { raw[i] = v } }
            rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        guard rc == 0 else {
            let e = Errno.current
            close(fd)
            throw SystemError("bind", text, e)
        }
        guard listen(fd, backlog) == 0 else {
            let e = Errno.current
            close(fd)
            throw SystemError("listen", text, e)
        }
        return fd
    }
}

/// `--token-file FILE`: the token every request must carry when the page is served beyond loopback.
/// The file must not be readable or writable by group or others and must belong to root or to this user
/// (as the private key files, Credentials/Keys/KeyFiles.swift), and hold one line of 16 to 256 printable
/// characters.
public struct PreviewToken: Sendable {
    let bytes: [UInt8]

    public init(file path: String) throws(UsageError) {
        // Opened without following a link and without blocking (a FIFO), then checked on the descriptor.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw UsageError("--token-file \(path): cannot open: \(Errno.current)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw UsageError("--token-file \(path): cannot stat: \(Errno.current)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw UsageError("--token-file \(path): not a regular file") }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw UsageError("--token-file \(path): mode 0\(String(mode, radix: 8)) lets group or others read or write the token; chmod 600")
        }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            throw UsageError("--token-file \(path): is owned by uid \(info.st_uid); it must belong to root or to uid \(geteuid()), the user preview runs as")
        }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count: Int
        switch buffer.withUnsafeMutableBytes({ FileDescriptor(rawValue: fd).read(into: $0) }) {
        case .success(let n): count = n
        case .failure(let e): throw UsageError("--token-file \(path): cannot read: \(e)")
        }
        var token = Array(buffer[0..<count])
        while let last = token.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { token.removeLast() }
        guard (16...256).contains(token.count), token.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw UsageError("--token-file \(path): must hold one line of 16 to 256 printable characters without spaces (the token)")
        }
        bytes = token
    }

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Byte for byte in a time that depends only on the lengths, never on where they differ.
    public func matches(_ given: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: given.count ^ bytes.count)
        let n = max(given.count, bytes.count)
        for i in 0..<n {
            let a = i < given.count ? given[i] : 0
            let b = i < bytes.count ? bytes[i] : 0
            difference |= a ^ b
        }
        return difference == 0 && given.count == bytes.count
    }
}

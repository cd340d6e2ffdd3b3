#if canImport(Glibc)
import Glibc
#endif
import Platform

/// A key file that cannot be used: names the file, and the key in it when there is one.
public struct KeyFileError: Error, Equatable, CustomStringConvertible, Sendable {
    public let file: String
    /// "key 2 (kid \"site-2025\")", or nil for a problem with the whole file.
    public let key: String?
    public let message: String

    public init(file: String, key: String? = nil, _ message: String) {
        self.file = file
        self.key = key
        self.message = message
    }

    public var description: String { file + (key.map { ": " + $0 } ?? "") + ": " + message }
}

/// Reads key files with the checks a kiosk needs: a regular file, a size limit, and permissions that
/// do not let another user swap in their own key.
enum KeyFileReader {
    /// Longer key files are refused: a JWKS of 64 keys is about 12 KiB.
    static let maxFileBytes = 64 * 1024

    enum Secrecy {
        /// A public key file (credential-keys): group and others may read it but must not write it.
        case publicKey
        /// A private key file (issue --key): nobody but its owner may read or write it (0600 or 0400).
        case privateKey
    }

    /// The owners a key file may have: root, or the user this process runs as (the service user).
    static func ownerAllowed(_ uid: uid_t) -> Bool { uid == 0 || uid == geteuid() }

    static func read(_ path: String, _ secrecy: Secrecy) throws(KeyFileError) -> [UInt8] {
        let fd: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK) {
        case .success(let opened): fd = opened
        case .failure(let e): throw KeyFileError(file: path, "cannot open: \(e)")
        }
        let owned = OwnedFileDescriptor(fd)
        defer { owned.close() }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { throw KeyFileError(file: path, "cannot stat: \(Errno.current)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw KeyFileError(file: path, "is not a regular file") }
        try checkPermissions(path, info, secrecy)
        guard info.st_size <= maxFileBytes else {
            throw KeyFileError(file: path, "is \(info.st_size) bytes; a key file may be at most \(maxFileBytes)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let result = chunk.withUnsafeMutableBytes { fd.read(into: $0) }
            switch result {
            case .success(0):
                return bytes
            case .success(let n):
                bytes += chunk[0..<n]
                guard bytes.count <= maxFileBytes else {
                    throw KeyFileError(file: path, "grew past \(maxFileBytes) bytes while being read")
                }
            case .failure(let e):
                throw KeyFileError(file: path, "cannot read: \(e)")
            }
        }
    }

    static func checkPermissions(_ path: String, _ info: stat, _ secrecy: Secrecy) throws(KeyFileError) {
        let mode = info.st_mode & 0o7777
        let octal = "0" + String(mode, radix: 8)
        switch secrecy {
        case .publicKey:
            guard mode & 0o022 == 0 else {
                throw KeyFileError(file: path, "mode \(octal) lets group or others write it (anyone could add a key); chmod go-w")
            }
        case .privateKey:
            guard mode & 0o077 == 0 else {
                throw KeyFileError(file: path, "mode \(octal) lets group or others read or write this private key; chmod 600")
            }
        }
        guard ownerAllowed(info.st_uid) else {
            throw KeyFileError(file: path, "is owned by uid \(info.st_uid); it must belong to root or to uid \(geteuid()), the user scangate runs as")
        }
    }

    /// A directory of key files: must not be writable by group or others either (or anyone could drop a
    /// key in). Returns the names of its entries, sorted.
    static func listDirectory(_ path: String) throws(KeyFileError) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw KeyFileError(file: path, "cannot stat: \(Errno.current)") }
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw KeyFileError(file: path, "directory mode 0\(String(mode, radix: 8)) lets group or others add files; chmod go-w")
        }
        guard ownerAllowed(info.st_uid) else {
            throw KeyFileError(file: path, "directory is owned by uid \(info.st_uid); it must belong to root or to uid \(geteuid())")
        }
        guard let dir = opendir(path) else { throw KeyFileError(file: path, "cannot open directory: \(Errno.current)") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names.sorted()
    }

    static func isDirectory(_ path: String) -> Bool { Directory.isDirectory(path) }
}

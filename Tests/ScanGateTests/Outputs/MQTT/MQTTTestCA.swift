import Foundation
import XCTest

/// A test certificate authority made with Debian's openssl command: a CA, server certificates and
/// client certificates (valid or expired), each key 0600 in a temporary directory.
final class MQTTTestCA {
    let directory: String
    let name: String

    var certificate: String { directory + "/\(name).crt" }
    var key: String { directory + "/\(name).key" }

    init(name: String = "ca", directory: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            throw MQTTTestError("openssl is missing: install it with `apt-get install openssl`")
        }
        self.directory = try directory ?? TestFiles.temporaryDirectory()
        self.name = name
        try MQTTTestCA.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                 "-keyout", key, "-out", certificate, "-days", "3", "-subj", "/CN=ScanGate test \(name)"])
        chmod(key, 0o600)
        chmod(certificate, 0o644)   // mqtt-tls-ca refuses a CA file others may change, whatever the umask
        // For `openssl ca` (certificates with dates in the past).
        try FileManager.default.createDirectory(atPath: self.directory + "/\(name)-issued", withIntermediateDirectories: true)
        try TestFiles.write("", to: self.directory + "/\(name)-index.txt")
        try TestFiles.write("1000\n", to: self.directory + "/\(name)-serial")
        try TestFiles.write("""
            [ ca ]
            default_ca = test
            [ test ]
            database = \(self.directory)/\(name)-index.txt
            new_certs_dir = \(self.directory)/\(name)-issued
            certificate = \(certificate)
            private_key = \(key)
            serial = \(self.directory)/\(name)-serial
            default_md = sha256
            policy = any
            unique_subject = no
            copy_extensions = copy
            [ any ]
            commonName = supplied

            """, to: self.directory + "/\(name)-ca.cnf")
    }

    @discardableResult
    static func openssl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw MQTTTestError("openssl \(args.joined(separator: " ")) failed: \(text)") }
        return text
    }

    /// Issues `<file>.crt` / `<file>.key` for `commonName`, with `subjectAltName` for a server, or
    /// clientAuth for a client. `expired`: valid only in January 2020.
    @discardableResult
    func issue(_ file: String, commonName: String, subjectAltName: String? = nil, expired: Bool = false) throws -> (cert: String, key: String) {
        let cert = directory + "/\(file).crt", key = directory + "/\(file).key", csr = directory + "/\(file).csr"
        var extensions = ["-addext", subjectAltName.map { "subjectAltName=\($0)" } ?? "extendedKeyUsage=clientAuth"]
        if subjectAltName != nil { extensions += ["-addext", "extendedKeyUsage=serverAuth"] }
        try MQTTTestCA.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                 "-keyout", key, "-out", csr, "-subj", "/CN=\(commonName)"] + extensions)
        chmod(key, 0o600)
        let dates = expired ? ["-startdate", "20200101000000Z", "-enddate", "20200201000000Z"] : ["-days", "2"]
        try MQTTTestCA.openssl(["ca", "-batch", "-notext", "-config", directory + "/\(name)-ca.cnf", "-in", csr, "-out", cert] + dates)
        return (cert, key)
    }

    /// The mosquitto listener block for TLS with client certificates from this CA (the certificate's CN
    /// is the user name).
    func listener(port: Int, serverCert: String, serverKey: String, extra: String = "") -> String {
        """
        listener \(port) 127.0.0.1
        cafile \(certificate)
        certfile \(serverCert)
        keyfile \(serverKey)
        require_certificate true
        use_identity_as_username true
        allow_anonymous false
        \(extra)
        """
    }
}

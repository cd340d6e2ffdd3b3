import COpenSSL
import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Reads a PEM certificate's subject and validity with libcrypto, to say why a broker refused this
/// kiosk: a broker that rejects an expired client certificate just closes the TLS connection, so the
/// client's own error is a bare protocol error; the dates say what happened.
public struct CertificateValidity: Sendable, Equatable {
    public var subject: String
    /// Seconds since the epoch.
    public var notBefore: Int64
    public var notAfter: Int64

    /// nil when the file cannot be read as a PEM certificate.
    public static func read(_ path: String) -> CertificateValidity? {
        guard let bio = BIO_new_file(path, "r") else { return nil }
        defer { BIO_free(bio) }
        guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else {
            ERR_clear_error()
            return nil
        }
        defer { X509_free(cert) }
        guard let before = seconds(X509_get0_notBefore(cert)), let after = seconds(X509_get0_notAfter(cert)) else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let subject = X509_NAME_oneline(X509_get_subject_name(cert), &buffer, Int32(buffer.count)).map { String(cString: $0) } ?? "?"
        return CertificateValidity(subject: subject, notBefore: before, notAfter: after)
    }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    /// "expired on 2020-02-01T00:00:00.000Z" or "is not valid before ...", or nil when valid at `now`.
    public func problem(at now: Int64) -> String? {
        if now > notAfter { return "expired on \(WallClock.rfc3339(nanoseconds: notAfter * 1_000_000_000))" }
        if now < notBefore {
            return "is not valid before \(WallClock.rfc3339(nanoseconds: notBefore * 1_000_000_000)) "
                + "(or this kiosk's clock is wrong: \(WallClock.rfc3339(nanoseconds: now * 1_000_000_000)))"
        }
        return nil
    }

    /// Why the client certificate at `path` would be refused now, or nil.
    public static func diagnose(_ path: String, option: String = "mqtt-tls-cert", now: Int64 = WallClock.nowNanoseconds() / 1_000_000_000) -> String? {
        guard let v = read(path) else { return nil }
        guard let problem = v.problem(at: now) else { return nil }
        return "the client certificate \(option) \(path) (\(v.subject)) \(problem)"
    }
}

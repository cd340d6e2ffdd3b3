import Foundation
import XCTest
@testable import Core
@testable import OSDP
import Platform
import Settings

/// The PD's store in memory: what KEYSET and COMSET saved, and a switch to make saving fail.
final class MemoryOSDPStore: OSDPStore {
    var keys: [(OSDPKey, [UInt8])] = []
    var links: [(UInt8, Int)] = []
    var failing = false

    func installKey(_ key: OSDPKey, check: [UInt8]) throws(OSDPStoreError) -> String? {
        if failing { throw OSDPStoreError("test: disk full") }
        keys.append((key, check))
        return nil
    }

    func storeLink(address: UInt8, baud: Int) throws(OSDPStoreError) {
        if failing { throw OSDPStoreError("test: disk full") }
        links.append((address, baud))
    }
}

enum OSDPTest {
    static let identity = OSDPIdentity(vendorCode: 0x0A0B0C, model: 0x21, version: 1, serial: 0x11223344, firmware: [1, 2, 3])
    static let features = OSDPReaderFeatures(leds: .redGreen, buzzer: true)

    static func configuration(address: UInt8 = 0, secure: OSDPSecureMode = .optional, key: OSDPKey? = nil,
                              installMode: Bool = false) -> OSDPPeripheralConfiguration {
        OSDPPeripheralConfiguration(address: address, baud: 9600, secure: secure, installMode: installMode, key: key,
                                    identity: identity, features: features, offlineAfterMs: 8000, readTTLMs: 5000)
    }

    static func peripheral(_ configuration: OSDPPeripheralConfiguration = configuration(), store: OSDPStore = MemoryOSDPStore(),
                           logger: Logger = Logger(level: .error), random: [UInt8]? = nil,
                           now: MonotonicInstant = t0) throws -> OSDPPeripheral {
        if let random {
            return try OSDPPeripheral(configuration: configuration, store: store, logger: logger, now: now) { n throws(OSDPCryptoError) in
                Array(random.prefix(n))
            }
        }
        return try OSDPPeripheral(configuration: configuration, store: store, logger: logger, now: now)
    }

    /// A fixed start for the injected clock.
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    static func at(_ ms: Double) -> MonotonicInstant { t0.adding(milliseconds: ms) }

    static func bytes(_ hex: String) -> [UInt8] {
        guard let b = Hex.decode(hex.replacingOccurrences(of: " ", with: "")) else {
            XCTFail("bad hex in test: \(hex)")
            return []
        }
        return b
    }

    static func hex(_ bytes: [UInt8]?) -> String { bytes.map { Hex.string($0) } ?? "(silence)" }

    /// Feeds `hex` at `ms` and returns the replies, as hex (one entry per reply).
    static func send(_ pd: OSDPPeripheral, _ hexFrame: String, at ms: Double = 0) -> [String] {
        pd.receive(bytes(hexFrame), at: at(ms)).compactMap { $0.reply.map { Hex.string($0) } }
    }
}

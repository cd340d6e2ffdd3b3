/// Every fuzz target: a name (also the corpus folder Tests/Fuzz/corpus/<name>) and the function that
/// feeds one input to the code under test and checks its invariants (`require`).
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([UInt8]) -> Void
    /// Steps the target exists to reach, each of which some seed must reach (`ScanGateFuzz --seed-reach`,
    /// run by Tests/Fuzz/run before the target is fuzzed); empty: no such check.
    var mustReach: [String] = []
    /// The steps of `mustReach` one input reaches.
    var reach: (@Sendable ([UInt8]) -> Set<String>)? = nil
}

enum FuzzTargets {
    static let all: [FuzzTarget] = [
        FuzzTarget(name: "serial", summary: "SerialFrameEncoder: framing, checksum, unsafe-byte policy",
                   run: SerialFramingFuzz.run),
        FuzzTarget(name: "config", summary: "ConfigFile.parse + apply + check-config round trip",
                   run: ConfigFileFuzz.run),
        FuzzTarget(name: "y4m", summary: "Y4MHeader.parse and Y4MReader frames", run: ImageFuzz.y4m),
        FuzzTarget(name: "pgm", summary: "ImageFile.decode (PGM P2/P5)", run: ImageFuzz.decode),
        FuzzTarget(name: "png", summary: "ImageFile.decode (libpng)", run: ImageFuzz.decode),
        FuzzTarget(name: "jpeg", summary: "ImageFile.decode (libturbojpeg)", run: ImageFuzz.decode),
        FuzzTarget(name: "normaliser", summary: "SymbolNormaliser.normalise", run: PayloadFuzz.normaliser),
        FuzzTarget(name: "filter", summary: "PayloadFilter.verdict", run: PayloadFuzz.filter),
        FuzzTarget(name: "eventline", summary: "EventLine.json / EventLine.text", run: OutputFuzz.eventLine),
        FuzzTarget(name: "logescape", summary: "Logger.escape(bytes:) and Logger.escape(_:)", run: OutputFuzz.logEscape),
        FuzzTarget(name: "inputfiles", summary: "config, scenario, replay folder, Y4M and image readers on FIFOs, devices, links, folders, sockets, oversize files",
                   run: BoundedInputFuzz.run),
        FuzzTarget(name: "labelunwarp", summary: "LabelUnwarp.flatten (decode-image's flattened-label pass)",
                   run: DecodingFuzz.labelUnwarp),
        FuzzTarget(name: "zxing", summary: "ZXingDecoder over the CZXingShim boundary (live decoder, every format)",
                   run: DecodingFuzz.zxing),
        FuzzTarget(name: "zxingwriter", summary: "ZXingWriter (make-code and the simulator: DataMatrix, Aztec, PDF417, 1D)",
                   run: DecodingFuzz.zxingWriter),
        FuzzTarget(name: "aamva", summary: "AAMVALicence.parse (driver licences in PDF417) and its JSON object", run: AAMVAFuzz.run),
        FuzzTarget(name: "wiegand", summary: "WiegandEncoder: wiegand-map, facility, over-range and formats", run: WiegandFuzz.run),
        FuzzTarget(name: "osdp", summary: "OSDP reader: frame reader, secure channel, PD state machine", run: OSDPFuzz.run,
                   mustReach: OSDPFuzz.steps, reach: OSDPFuzz.reach),
        FuzzTarget(name: "osdpfile", summary: "OSDP osdp_FILETRANSFER reassembly and osdp_FTSTAT replies (OSDPFileTransfer)",
                   run: OSDPFileTransferFuzz.run),
        FuzzTarget(name: "osdpout", summary: "osdp_OUT record parser (OSDPOutputControl), OSTATR levels", run: OSDPOutputFuzz.run),
        FuzzTarget(name: "jws", summary: "JWS compact parser, JWT claims, verifier (nothing verifies)", run: CredentialFuzz.jws,
                   mustReach: CredentialFuzz.steps, reach: CredentialFuzz.jwsReach),
        FuzzTarget(name: "sdjwt", summary: "SD-JWT presentations: splitter, disclosures, key-binding claims, cnf keys, holder-binding verifier (nothing verifies)",
                   run: PresentationFuzz.run, mustReach: PresentationFuzz.steps, reach: PresentationFuzz.reach),
        FuzzTarget(name: "base45", summary: "Base45 decode/encode (RFC 9285)", run: CredentialFuzz.base45),
        FuzzTarget(name: "cose", summary: "CBOR decoder, COSE_Sign1 and CWT claims, verifier", run: CredentialFuzz.cose,
                   mustReach: CredentialFuzz.steps, reach: CredentialFuzz.coseReach),
        FuzzTarget(name: "jwks", summary: "JWKS reader (credential-keys)", run: CredentialFuzz.jwks),
        FuzzTarget(name: "statuslist", summary: "Token Status Lists: bounded zlib inflate, bit unpacking, statuslist+jwt claims, verifier",
                   run: StatusListFuzz.run),
        FuzzTarget(name: "sitepolicy", summary: "site policy claims (JSON and CWT), the signed document's verifier, TZif zones, hours",
                   run: SitePolicyFuzz.run),
        FuzzTarget(name: "replaystore", summary: "the one-time store on a hostile file, and consumes with a clock stepped ahead",
                   run: ReplayStoreFuzz.run),
        FuzzTarget(name: "mqttcommand", summary: "MQTTCommandParser.parse (MQTT commands) and the result message", run: MQTTCommandFuzz.run),
    ]

    static let byName: [String: FuzzTarget] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    static func run(_ name: String, _ bytes: [UInt8]) {
        byName[name]?.run(bytes)
    }
}

/// Takes choices and fields from the front of a fuzz input; the rest is the payload.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next byte (0 when the input is used up).
    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    /// One of `choices`, picked by the next byte.
    mutating func pick<T>(_ choices: [T]) -> T {
        choices[Int(byte()) % choices.count]
    }

    mutating func flag() -> Bool { byte() & 1 == 1 }

    /// A short field: a length byte (mod `maxLength + 1`), then that many bytes.
    mutating func field(maxLength: Int) -> [UInt8] {
        let count = min(Int(byte()) % (maxLength + 1), bytes.count - position)
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    /// Everything not yet taken.
    mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return position < bytes.count ? Array(bytes[position...]) : []
    }
}

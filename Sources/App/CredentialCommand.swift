import Config
import Core
import Credentials
import Decoding
import Images
import Platform
import Simulator
import Settings
import StillImages

/// `scangate credential keygen|issue|present|verify`: signed passes for a small site without a server, for a
/// manual gate, and for tests.
enum CredentialCommand {
    static let help = """
        Usage: scangate credential keygen --out DIR [--kid K] [--algorithm ed25519|es256]
               scangate credential issue --key FILE --number N --ttl DURATION [--config FILE] [--aud X] [--iss X]
                                         [--kid K] [--one-time] [--format jwt|cwt] [--status-uri URI --status-idx N]
                                         [--grp GROUP] [--holder-key FILE] [--out FILE.png|FILE.pgm | --text]
                                         [--ecc L|M|Q|H] [--scale N]
               scangate credential present --pass FILE|- --holder-key FILE (--aud DOOR | --config FILE) [--nonce N]
                                           [--out FILE.png|FILE.pgm | --text] [--ecc L|M|Q|H] [--scale N]
               scangate credential verify TEXT|--image FILE|--stdin [--config FILE] [--credential-keys PATH]
                                          [--credential-format jwt|cwt|any] [--credential-audience X]
                                          [--credential-issuer X] [--credential-algorithms LIST]
                                          [--credential-leeway-s S] [--credential-max-lifetime-s S]
                                          [--credential-number-claim NAME] [--credential-one-time]
                                          [--credential-replay-store PATH] [--no-credential-require-synced-clock]
                                          [--credential-holder-binding off|accept|require]
                                          [--credential-presentation-window-s S] [--json]

        keygen   writes a new signing key to DIR/KID.key (mode 0600) and adds its public key to
                 DIR/\(KeyGeneration.jwksName) (created, or extended so older keys stay valid). Copy only the
                 JWKS to the kiosk, as credential-keys. KID defaults to 8 characters of the key's RFC 7638
                 thumbprint; ed25519 is the default algorithm.
        issue    signs a pass for credential number N valid for DURATION, which needs its unit (90s, 15m,
                 8h, 7d; at most 3650d): a bare number is refused.
                 --format cwt (default) writes SG1: + base45 (fits QR version 7), jwt a JWS compact token.
                 --aud must be the kiosk's credential-audience when it sets one. --config FILE (the kiosk's
                 config) takes --aud, --iss, --format and --one-time from its [credential] section unless
                 given, and refuses a --ttl over its credential-max-lifetime-s. --credential-audience and
                 --credential-issuer are the same as --aud and --iss.
                 --one-time adds a jti (cti) that a kiosk with credential-one-time consumes. --kid must match
                 the kid in the kiosk's key set when keygen was given one. --status-uri URI --status-idx N
                 name the pass's entry in a Token Status List (the status claim; CWT 65535), so the site
                 can revoke it there. --grp GROUP names the pass's group in the site policy (policy-file),
                 whose schedule then gives its hours. --holder-key FILE (a PEM public key, or a key
                 from keygen) binds the pass to that holder (cnf, JWT or CWT): a kiosk then accepts it
                 only in a fresh presentation signed by the holder. Without --out or --text, the pass
                 is drawn in the terminal as a QR code; --out writes an image. The ECC level is the highest
                 that keeps the smallest QR version (or --ecc).
        present  makes a presentation of a holder-bound pass for one door: for a JWT pass an SD-JWT
                 with a key-binding JWT, for an SG1: pass an SG2: code (the pass and a COSE_Sign1 proof),
                 signed by the holder's private key over iat now, aud DOOR, a nonce and the pass's hash.
                 A kiosk with credential-holder-binding accepts it once, within
                 credential-presentation-window-s (30 s). For tests and for sites without a wallet app.
        verify   checks passes as the daemon does (TEXT, each QR code in --image FILE, or each line of --stdin)
                 and prints the claims, or `refused: REASON`. Its settings are the daemon's [credential] keys,
                 with the same names: --config FILE reads them from the daemon's config file, and flags
                 override it. The format defaults to any; credential-require-synced-clock to yes.
                 --credential-one-time consumes each accepted pass in --credential-replay-store (default
                 /var/lib/scangate/credential-replay), durably before it prints `accepted`: a manual gate can
                 use it beside the daemon. With --credential-holder-binding accept or require, each accepted
                 presentation is recorded there too (it is accepted once). The older names --keys, --format, --aud, --iss, --algorithms,
                 --leeway, --max-lifetime, --number-claim, --one-time, --replay-store and
                 --require-synced-clock yes|no still work.
        Switches take --NAME, --no-NAME, --NAME=yes|no or --NAME yes|no (also true/false, on/off).
        Exit: 0 every pass accepted (or the key/pass written), 1 a pass was refused, 2 bad flag, value or file.
        """

    static func run(_ arguments: [String]) -> Int32 {
        CommandArguments.dispatch(arguments, command: "credential", help: help, [("keygen", keygen), ("issue", issue), ("present", present), ("verify", verify)])
    }

    // MARK: - keygen

    static func keygen(_ arguments: [String]) -> Int32 {
        var out: String?
        var kid: String?
        var algorithm = SignatureAlgorithm.ed25519
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help": print(help); return 0
                case "--out": out = try args.value(arg, "a DIR")
                case "--kid": kid = try args.value(arg, "a key id K")
                case "--algorithm":
                    let name = try args.value(arg, "ed25519 or es256")
                    guard let a = SignatureAlgorithm(settingName: name) else { throw UsageError("--algorithm: '\(name)' is not ed25519 or es256") }
                    algorithm = a
                default: throw UsageError("credential keygen: unknown option \(arg) (see scangate credential --help)")
                }
            }
            guard let out else { throw UsageError("credential keygen needs --out DIR") }
            let written: KeyGeneration.Written
            do throws(KeyFileError) {
                written = try KeyGeneration.generate(directory: out, algorithm: algorithm, keyID: kid)
            } catch {
                throw UsageError("--out " + error.description)
            }
            print("kid \(written.keyID): private key \(written.privateKeyFile) (mode 0600, keep it off the kiosk); public key added to \(written.jwksFile) (\(written.keysInSet) key\(written.keysInSet == 1 ? "" : "s")), which the kiosk reads as credential-keys")
            return ExitCode.success.rawValue
        } catch {
            return usageError(error.message)
        }
    }

    // MARK: - issue

    static func issue(_ arguments: [String]) -> Int32 {
        var keyFile: String?
        var number: String?
        var ttl: Int64?
        var request = PassRequest(format: .cwt, number: "", lifetimeSeconds: 0, now: 0)
        var out: String?
        var textOnly = false
        var ecc: QREncoder.ErrorCorrection?
        var scale = 8
        var configPath: String?
        var formatGiven = false, oneTimeGiven = false
        var statusURI: String?, statusIndex: Int?
        var holderKeyFile: String?
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help": print(help); return 0
                case "--config": configPath = try args.value(arg, "the kiosk's config FILE")
                case "--key": keyFile = try args.value(arg, "a private key FILE (from keygen)")
                case "--number": number = try args.value(arg, "a credential number N")
                case "--ttl": ttl = try duration(arg, try args.value(arg, "a DURATION such as 90s, 15m, 8h or 7d"))
                case "--aud", "--credential-audience": request.audience = try args.value(arg, "an audience X")
                case "--iss", "--credential-issuer": request.issuer = try args.value(arg, "an issuer X")
                case "--kid": request.keyID = try args.value(arg, "a key id K")
                case "--format":
                    let name = try args.value(arg, "jwt or cwt")
                    guard let f = CredentialFormat(rawValue: name) else { throw UsageError("--format: '\(name)' is not jwt or cwt") }
                    request.format = f
                    formatGiven = true
                case "--out": out = try args.value(arg, "a FILE.png or FILE.pgm")
                case "--ecc":
                    let name = try args.value(arg, "L, M, Q or H")
                    guard let e = QREncoder.ErrorCorrection(name: name) else { throw UsageError("--ecc: '\(name)' is not one of L, M, Q, H") }
                    ecc = e
                case "--scale": scale = try args.number(arg, 1...64)
                case "--status-uri": statusURI = try args.value(arg, "the status list's URI (its sub)")
                case "--status-idx": statusIndex = try args.number(arg, 0...StatusReference.maxIndex)
                case "--holder-key": holderKeyFile = try args.value(arg, "the holder's public key FILE (PEM, or a key from keygen)")
                case "--grp":
                    let group = try args.value(arg, "the pass's group in the site policy")
                    guard !group.isEmpty, group.utf8.count <= SitePolicy.maxNameBytes else {
                        throw UsageError("--grp must be 1 to \(SitePolicy.maxNameBytes) bytes (a group name of the site policy)")
                    }
                    request.group = group
                default:
                    if let on = try args.switchValue(arg, "one-time") {
                        request.oneTime = on
                        oneTimeGiven = true
                    } else if let on = try args.switchValue(arg, "text") {
                        textOnly = on
                    } else {
                        throw UsageError("credential issue: unknown option \(arg) (see scangate credential --help)")
                    }
                }
            }
            guard let keyFile else { throw UsageError("credential issue needs --key FILE") }
            switch (statusURI, statusIndex) {
            case (nil, nil): break
            case (let uri?, let index?):
                guard !uri.isEmpty, uri.utf8.count <= StatusReference.maxURIBytes else {
                    throw UsageError("--status-uri must be 1 to \(StatusReference.maxURIBytes) bytes")
                }
                request.status = StatusReference(index: index, uri: uri)
            default: throw UsageError("credential issue takes --status-uri URI and --status-idx N together (the pass's entry in a status list)")
            }
            guard let number, !number.isEmpty else { throw UsageError("credential issue needs --number N") }
            guard number.count <= CredentialVerifier.maxNumberLength,
                  number.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) }) else {
                throw UsageError("--number: at most \(CredentialVerifier.maxNumberLength) characters, no control characters")
            }
            guard let ttl else { throw UsageError("credential issue needs --ttl DURATION (90s, 15m, 8h, 7d)") }
            if out != nil && textOnly { throw UsageError("credential issue takes --out FILE or --text, not both") }
            if let configPath {
                // A pass the kiosk with this file accepts: its audience, issuer, format and one-time use,
                // unless a flag says otherwise; a lifetime over its limit is refused here, not at the door.
                let kiosk = try Configuration.resolve(configPath: configPath, flagAssignments: []).credential
                if request.audience == nil { request.audience = kiosk.audience }
                if request.issuer == nil { request.issuer = kiosk.issuer }
                if !formatGiven, let only = kiosk.format.formats.first, kiosk.format.formats.count == 1 { request.format = only }
                if !oneTimeGiven { request.oneTime = kiosk.oneTime }
                if kiosk.maxLifetimeSeconds > 0 && ttl > Int64(kiosk.maxLifetimeSeconds) {
                    throw UsageError("--ttl: \(ttl) s is longer than credential-max-lifetime-s = \(kiosk.maxLifetimeSeconds) in \(configPath); that kiosk would refuse the pass")
                }
            }
            let key: PrivateKey
            do throws(KeyFileError) {
                key = try KeyGeneration.loadPrivateKey(keyFile)
            } catch {
                throw UsageError("--key " + error.description)
            }
            if let holderKeyFile {
                do throws(KeyFileError) {
                    request.holderKey = try KeyGeneration.loadHolderPublicKey(holderKeyFile)
                } catch {
                    throw UsageError("--holder-key " + error.description)
                }
            }
            request.number = number
            request.lifetimeSeconds = ttl
            request.now = WallClock.nowNanoseconds() / 1_000_000_000
            let pass: String
            do throws(CryptoError) {
                pass = try PassIssuer.issue(request, key: key)
            } catch {
                throw UsageError("credential issue: \(error)")
            }
            return try show(pass, text: textOnly, out: out, ecc: ecc, scale: scale)
        } catch {
            return usageError(error.message)
        }
    }

    /// A pass or presentation as text (--text), as a QR code in an image file (--out), or drawn in the terminal.
    static func show(_ pass: String, text: Bool, out: String?, ecc: QREncoder.ErrorCorrection?, scale: Int) throws(UsageError) -> Int32 {
        if text {
            _ = FileDescriptor(rawValue: 1).writeAll(Array((pass + "\n").utf8))
            return ExitCode.success.rawValue
        }
        do throws(UsageError) {
            let (bitmap, _) = try qrCode(Array(pass.utf8), ecc: ecc)
            if let out {
                guard let format = ImageFile.writableFormat(forPath: out) else { throw UsageError("--out: '\(out)' must end in .png or .pgm") }
                let image = SymbolImage.render(bitmap, moduleSize: scale, barHeight: 50 * scale, quietZone: 4)
                try ImageFile.write(image, to: out, format: format)
                return ExitCode.success.rawValue
            }
            let image = SymbolImage.render(bitmap, moduleSize: 1, barHeight: 16, quietZone: 4)
            let lines = TerminalArt.lines(image, ansiColours: isatty(1) == 1)
            _ = FileDescriptor(rawValue: 1).writeAll(Array((lines.joined(separator: "\n") + "\n").utf8))
            return ExitCode.success.rawValue
        } catch {
            return usageError(error.message)
        }
    }

    // MARK: - present

    static func present(_ arguments: [String]) -> Int32 {
        var passFile: String?, holderKeyFile: String?, audience: String?, nonce: String?, out: String?, configPath: String?
        var textOnly = false
        var ecc: QREncoder.ErrorCorrection?
        var scale = 8
        var args = CommandArguments(arguments)
        do throws(UsageError) {
            while let arg = args.next() {
                switch arg {
                case "-h", "--help": print(help); return 0
                case "--pass": passFile = try args.value(arg, "the pass FILE (its text, as issue --text writes it), or - for stdin")
                case "--holder-key": holderKeyFile = try args.value(arg, "the holder's private key FILE (from keygen)")
                case "--aud", "--credential-audience": audience = try args.value(arg, "the door X (the kiosk's credential-audience)")
                case "--config": configPath = try args.value(arg, "the kiosk's config FILE")
                case "--nonce": nonce = try args.value(arg, "a nonce text")
                case "--out": out = try args.value(arg, "a FILE.png or FILE.pgm")
                case "--ecc":
                    let name = try args.value(arg, "L, M, Q or H")
                    guard let e = QREncoder.ErrorCorrection(name: name) else { throw UsageError("--ecc: '\(name)' is not one of L, M, Q, H") }
                    ecc = e
                case "--scale": scale = try args.number(arg, 1...64)
                default:
                    if let on = try args.switchValue(arg, "text") {
                        textOnly = on
                    } else {
                        throw UsageError("credential present: unknown option \(arg) (see scangate credential --help)")
                    }
                }
            }
            guard let passFile else { throw UsageError("credential present needs --pass FILE (or - for stdin)") }
            guard let holderKeyFile else { throw UsageError("credential present needs --holder-key FILE (the holder's private key)") }
            if audience == nil, let configPath {
                audience = try Configuration.resolve(configPath: configPath, flagAssignments: []).credential.audience
            }
            guard let audience, !audience.isEmpty else {
                throw UsageError("credential present needs --aud DOOR (the kiosk's credential-audience), or --config FILE that sets it")
            }
            if let nonce, nonce.isEmpty || nonce.utf8.count > 128 { throw UsageError("--nonce must be 1 to 128 bytes") }
            if out != nil && textOnly { throw UsageError("credential present takes --out FILE or --text, not both") }
            let text = try readPass(passFile)
            let key: PrivateKey
            do throws(KeyFileError) {
                key = try KeyGeneration.loadPrivateKey(holderKeyFile)
            } catch {
                throw UsageError("--holder-key " + error.description)
            }
            let presentation: String
            do throws(CryptoError) {
                presentation = try PresentationMaker.present(text, holderKey: key, audience: audience,
                                                             now: WallClock.nowNanoseconds() / 1_000_000_000, nonce: nonce)
            } catch {
                throw UsageError("credential present: \(error)")
            }
            return try show(presentation, text: textOnly, out: out, ecc: ecc, scale: scale)
        } catch {
            return usageError(error.message)
        }
    }

    /// The pass's text from a file or stdin: one line, at most a pass's size.
    static func readPass(_ path: String) throws(UsageError) -> String {
        var bytes: [UInt8] = []
        if path == "-" {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while bytes.count <= 8192 {
                let n = chunk.withUnsafeMutableBytes { FileDescriptor(rawValue: 0).read(into: $0) }
                switch n {
                case .success(0): chunk = []
                case .success(let count): bytes += chunk[0..<count]
                case .failure(let e): throw UsageError("--pass -: cannot read stdin: \(e)")
                }
                if chunk.isEmpty { break }
            }
        } else {
            do throws(BoundedFileError) {
                bytes = try BoundedFile.readAll(path: path, limit: FileSizeLimit(bytes: 8192, kind: "pass files"))
            } catch {
                throw UsageError("--pass \(error)")
            }
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text.removeLast() }
        guard !text.isEmpty, text.utf8.count <= 4096, !text.contains("\n") else {
            throw UsageError("--pass \(path): expected one pass of 1 to 4096 characters on one line (as issue --text writes it)")
        }
        return text
    }

    /// The QR symbol for a pass: libqrencode's mode optimisation (base45 goes in alphanumeric mode), at
    /// the highest ECC level that needs no larger version than level L does - more damage tolerated for
    /// free - unless `ecc` is given.
    static func qrCode(_ payload: [UInt8], ecc: QREncoder.ErrorCorrection?) throws(UsageError) -> (ModuleBitmap, QREncoder.ErrorCorrection) {
        do throws(SymbolError) {
            if let ecc { return (try QREncoder.encode(payload, ecc: ecc, segmented: true), ecc) }
            let smallest = try QREncoder.encode(payload, ecc: .L, segmented: true)
            for level in [QREncoder.ErrorCorrection.H, .Q, .M] {
                let symbol = try? QREncoder.encode(payload, ecc: level, segmented: true)
                if let symbol, symbol.width == smallest.width { return (symbol, level) }
            }
            return (smallest, .L)
        } catch {
            throw UsageError("credential issue: \(error.description)")
        }
    }

    /// 90s, 15m, 8h, 7d: whole seconds, 1 s to 3650 days. The unit is required: a bare 8 could be
    /// read as 8 seconds or 8 hours.
    static func duration(_ flag: String, _ text: String) throws(UsageError) -> Int64 {
        var digits = Substring(text)
        let unit: Int64
        switch digits.last {
        case "s": unit = 1; digits = digits.dropLast()
        case "m": unit = 60; digits = digits.dropLast()
        case "h": unit = 3600; digits = digits.dropLast()
        case "d": unit = 86400; digits = digits.dropLast()
        default:
            if !text.isEmpty, text.allSatisfy(\.isNumber) {
                throw UsageError("\(flag): '\(text)' has no unit; write it with s, m, h or d (90s, 15m, 8h, 7d)")
            }
            unit = 1
        }
        guard let n = Int64(digits), n > 0, n <= 3650 * 86400 / unit, n * unit <= 3650 * 86400 else {
            throw UsageError("\(flag): '\(text)' is not a duration from 1s to 3650d (90s, 15m, 8h, 7d)")
        }
        return n * unit
    }

    // MARK: - verify

    /// verify's older names of the [credential] settings, kept working: the config's names
    /// (`--credential-keys`, ...) are the documented ones.
    static let verifyAliases: [String: String] = [
        "keys": "credential-keys", "aud": "credential-audience", "iss": "credential-issuer",
        "algorithms": "credential-algorithms", "leeway": "credential-leeway-s", "max-lifetime": "credential-max-lifetime-s",
        "number-claim": "credential-number-claim", "one-time": "credential-one-time", "replay-store": "credential-replay-store",
        "require-synced-clock": "credential-require-synced-clock", "format": "credential-format",
    ]

    static func verify(_ arguments: [String]) -> Int32 {
        // The older `--require-synced-clock yes|no` always took the next argument; it still does, so a
        // bad word there is an error and not a pass to verify.
        var arguments = arguments
        var at = 0
        while at + 1 < arguments.count {
            if arguments[at] == "--require-synced-clock" {
                arguments[at] += "=" + arguments[at + 1]
                arguments.remove(at: at + 1)
            }
            at += 1
        }
        do throws(UsageError) {
            let parsed = try CommandLineParser.parse(
                arguments, table: OptionTable.credential, aliases: verifyAliases,
                local: [.init("image", value: "a FILE.png, .jpg or .pgm"), .init("stdin"), .init("json")],
                positionals: true, command: "credential")
            if parsed.help { print(help); return 0 }
            let texts = parsed.positionals
            let images = parsed.localValues("image")
            let fromStdin = parsed.localValue("stdin") == "true"
            let json = parsed.localValue("json") == "true"
            // The daemon's resolution: defaults, then the [credential] section of --config, then the flags.
            var settings: CredentialSettings
            do throws(UsageError) {
                settings = try Configuration.resolve(configPath: parsed.configPath, flagAssignments: parsed.assignments).credential
            } catch {
                throw UsageError(parsed.spelledAsTyped(error.message))
            }
            if settings.format == .off {
                // verify checks passes whatever the file says; off given as a flag is a mistake.
                if parsed.assignments.contains(where: { $0.0.name == "credential-format" }) {
                    let flag = parsed.spelling["credential-format"] ?? "--credential-format"
                    throw UsageError("\(flag): 'off' is not jwt, cwt or any")
                }
                settings.format = .any
            }
            let sources = (texts.isEmpty ? 0 : 1) + (images.isEmpty ? 0 : 1) + (fromStdin ? 1 : 0)
            guard sources == 1 else { throw UsageError("credential verify takes a TEXT, --image FILE or --stdin (one of them)") }
            guard settings.keys != nil else {
                throw UsageError("credential verify needs --credential-keys FILE or --config FILE with credential-keys (the JWKS, PEM file or KID.pem directory)")
            }
            do throws(UsageError) { try settings.validate() } catch {
                throw UsageError(parsed.spelledAsTyped(error.message))
            }
            var payloads: [[UInt8]] = texts.map { Array($0.utf8) }
            for file in images { payloads += try decodeImage(file) }
            // Warnings (the clock, the replay store) go to stderr; each pass's verdict goes to stdout.
            let logger = Logger(level: .warning) { line in
                // "<4>message" from the logger; on a terminal: "scangate: message".
                Logger.writeToStderr("scangate: " + (line.hasPrefix("<") ? String(line.dropFirst(3)) : line))
            }
            let policy: CredentialPolicy
            do throws(UsageError) {
                policy = try CredentialPolicy.make(settings: settings, logger: logger, clock: FaultInjection.clockCheck())
            } catch {
                throw UsageError(parsed.spelledAsTyped(error.message))
            }
            var allAccepted = true
            var clockHintGiven = false
            let out = FileDescriptor(rawValue: 1)
            func judge(_ payload: [UInt8]) {
                let result = policy.evaluate(payload)
                if case .failure(let refusal) = result {
                    allAccepted = false
                    if refusal.reason == .clockNotSynchronised && !clockHintGiven {
                        clockHintGiven = true
                        Logger.writeToStderr("scangate: the clock is not synchronised (\(Logger.escapeControls(refusal.detail))); wait for NTP "
                            + "(timedatectl shows 'System clock synchronized: yes'), or pass --credential-require-synced-clock=no "
                            + "for a check that ignores the clock")
                    }
                }
                _ = out.writeAll(Array((render(result, json: json) + "\n").utf8))
            }
            if fromStdin {
                readLines(FileDescriptor(rawValue: 0)) { line in judge(line) }
            } else {
                payloads.forEach(judge)
            }
            return allAccepted ? ExitCode.success.rawValue : ExitCode.nothingFound.rawValue
        } catch {
            return usageError(error.message)
        }
    }

    static func render(_ result: Result<VerifiedPass, Refusal>, json: Bool) -> String {
        switch result {
        case .success(let pass):
            if json {
                return JSONText.object([("verdict", JSONText.string("accepted")), ("credential", CredentialJSON.object(pass.info)),
                                        ("claims", pass.claimsJSON)])
            }
            return "accepted \(pass.format.rawValue) pass: number \(Logger.escape(pass.number)), kid \(Logger.escape(pass.keyID)), "
                + "jti \(pass.tokenID.map { Logger.escape($0) } ?? "-"), exp \(CredentialVerifier.time(pass.expiresAt))\n"
                + "claims \(Logger.escapeControls(pass.claimsJSON))"
        case .failure(let refusal):
            if json {
                return JSONText.object([("verdict", JSONText.string("rejected")), ("reason", JSONText.string(refusal.reason.rawValue)),
                                        ("detail", JSONText.string(refusal.detail))])
            }
            return "refused: \(refusal.reason.rawValue): \(Logger.escape(refusal.detail))"
        }
    }

    /// Every QR code in an image (a photo of a phone screen, a printed pass).
    static func decodeImage(_ file: String) throws(UsageError) -> [[UInt8]] {
        let image = try ImageFile.read(path: file)
        var settings = imageDecoderDefaults()
        settings.symbologies = [.qr]
        settings.qrTextAsUTF8 = false
        let decoder = try ImageDecoder(settings: settings)
        let found = decoder.decode(width: image.width, height: image.height, luma: image.pixels)
        guard !found.isEmpty else { throw UsageError("--image \(file): no QR code found") }
        return found.map(\.data)
    }

    /// Calls `body` for each non-empty line of `fd` (CR LF or LF; a last line without one counts), as it
    /// arrives: a scanner in keyboard mode types a pass and Enter.
    static func readLines(_ fd: FileDescriptor, maxLine: Int = 8192, _ body: ([UInt8]) -> Void) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var overlong = false
        func finish() {
            if pending.last == 0x0D { pending.removeLast() }
            if !pending.isEmpty && !overlong { body(pending) }
            pending.removeAll(keepingCapacity: true)
            overlong = false
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { fd.read(into: $0) }
            guard case .success(let count) = n, count > 0 else { break }
            for b in chunk[0..<count] {
                if b == 0x0A { finish(); continue }
                if pending.count < maxLine { pending.append(b) } else { overlong = true }
            }
        }
        finish()
    }
}

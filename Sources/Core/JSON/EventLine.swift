import Platform

/// The text of one event on stdout, in each output format.
public enum EventLine {
    /// `{"seq":1,"time":"…","symbology":"QR-Code","data":"…","frame":12,"latency_ms":3.2,"bounds":{…},
    /// "format":"QRCode","corners":[[x,y],…],"gs1":false}`.
    /// `data` is present when the payload is valid UTF-8; otherwise `data_base64` carries the bytes.
    /// `format` is zxing-cpp's name of the symbology; `corners` the code's four corners (top-left,
    /// top-right, bottom-right, bottom-left as the code reads; zbar's are its box's); `gs1` whether the
    /// payload is GS1 element strings; a code with an ECI adds `"eci":26` and, when the ECI names one,
    /// `"charset":"UTF-8"` (`data` stays the payload's bytes as encoded).
    /// A PDF417 laid out as a North American driver licence or ID card (AAMVA) adds
    /// `"aamva":{"issuer":"636014","version":10,"type":"DL","number":"D1234567","expiry":"2030-08-31",
    /// "jurisdiction":"CA","country":"USA"}` (the fields it has; never the name, birth date or address).
    /// A code a policy rejected adds `"rejected":"reason"`; door outputs that refused it add
    /// `"refused":{"output":"reason",...}`; a verified pass adds `"credential":{number, kid, jti, exp}`
    /// (and `"passback":true` when anti-passback, soft, let a passback through; `"passback_view":"offline"`
    /// when anti-passback is shared over MQTT and the broker was away, so this kiosk's own view decided).
    public static func json(_ event: ReadEvent) -> String {
        var fields: [(String, String)] = [
            ("seq", String(event.seq)),
            ("time", JSONText.string(WallClock.rfc3339(nanoseconds: event.wallTimeNanoseconds))),
            ("symbology", JSONText.string(event.symbol.symbology.zbarName)),
        ]
        if let text = String(validating: event.symbol.data, as: UTF8.self) {
            fields.append(("data", JSONText.string(text)))
        } else {
            fields.append(("data_base64", JSONText.string(Base64.encode(event.symbol.data))))
        }
        let b = event.symbol.bounds
        fields += [
            ("frame", String(event.frame)),
            ("latency_ms", JSONText.number(event.latencyMilliseconds)),
            ("bounds", JSONText.object([("x", String(b.x)), ("y", String(b.y)), ("w", String(b.w)), ("h", String(b.h))])),
            ("format", JSONText.string(event.symbol.symbology.zxingName)),
            ("corners", "[" + event.symbol.corners.map { "[\($0.x),\($0.y)]" }.joined(separator: ",") + "]"),
            ("gs1", event.symbol.content.gs1 ? "true" : "false"),
        ]
        if let eci = event.symbol.content.eci {
            fields.append(("eci", String(eci)))
            if let charset = event.symbol.content.charset { fields.append(("charset", JSONText.string(charset))) }
        }
        if event.symbol.symbology == .pdf417, let licence = AAMVALicence.parse(event.symbol.data) {
            fields.append(("aamva", aamva(licence)))
        }
        if case .rejected(let reason) = event.verdict { fields.append(("rejected", JSONText.string(reason))) }
        if let c = event.credential { fields.append(("credential", credential(c))) }
        let refusals = event.refusals
        if !refusals.isEmpty {
            fields.append(("refused", JSONText.object(refusals.map { ($0.output, JSONText.string($0.reason)) })))
        }
        return JSONText.object(fields)
    }

    /// `{"format":"jwt","number":"1234","kid":"site-2026","jti":"...","exp":1796000000}`: what the JSON
    /// line may say of a verified pass (never the token).
    public static func credential(_ c: CredentialInfo) -> String {
        var fields: [(String, String)] = [
            ("format", JSONText.string(c.format)),
            ("number", JSONText.string(c.number)),
            ("kid", JSONText.string(c.keyID)),
        ]
        if let jti = c.tokenID { fields.append(("jti", JSONText.string(jti))) }
        fields.append(("exp", String(c.expiresAt)))
        // Anti-passback soft: an accepted read whose last use here was in the same direction.
        if c.passback { fields.append(("passback", "true")) }
        // Anti-passback shared over MQTT, the broker away: this kiosk's own view decided.
        if c.passbackOffline { fields.append(("passback_view", "\"offline\"")) }
        return JSONText.object(fields)
    }

    /// The JSON object of an AAMVA card's fields (those it has).
    public static func aamva(_ l: AAMVALicence) -> String {
        var fields: [(String, String)] = [
            ("issuer", JSONText.string(l.issuer)),
            ("version", String(l.version)),
            ("type", JSONText.string(l.documentType)),
        ]
        if let v = l.documentNumber { fields.append(("number", JSONText.string(v))) }
        if let v = l.expiry { fields.append(("expiry", JSONText.string(v))) }
        if let v = l.jurisdiction { fields.append(("jurisdiction", JSONText.string(v))) }
        if let v = l.country { fields.append(("country", JSONText.string(v))) }
        return JSONText.object(fields)
    }

    /// zbarcam's `QR-Code:payload`. Control characters, backslash and bytes that are not UTF-8 are written
    /// as `\xNN`, so one code is always exactly one line. Rejected codes are not printed.
    public static func text(_ event: ReadEvent) -> String? {
        guard event.verdict.isAccepted else { return nil }
        return event.symbol.symbology.zbarName + ":" + Logger.escape(bytes: event.symbol.data)
    }
}

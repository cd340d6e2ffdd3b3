import Core
import Settings

/// The decoder `run` uses: the configured library (`decoder = zxing | zbar`) behind the idle gate
/// unless gating is off.
public enum StreamDecoder {
    /// `logger` hears of zxing-cpp assertions the decoder recovered from (ZXingDecoder.onAssertion).
    public static func make(settings: DecoderSettings, logger: Logger? = nil) throws(UsageError) -> Decoder {
        let decoder = try bare(settings: settings)
        if let logger, let zxing = decoder as? ZXingDecoder {
            zxing.onAssertion = { logger.error("decoder: \($0)", rateLimitKey: "zxing-assertion") }
        }
        guard settings.idleRescanFrames > 0 else { return decoder }
        return GatedDecoder(decoder, rescanEvery: settings.idleRescanFrames, threshold: settings.changeThreshold)
    }

    /// The configured library alone, without the gate (doctor, check-config, the bench).
    public static func bare(settings: DecoderSettings) throws(UsageError) -> Decoder {
        try settings.validate()
        switch settings.engine {
        case .zxing: return ZXingDecoder(settings: settings)
        case .zbar: return try ZbarDecoder(settings: settings)
        }
    }
}

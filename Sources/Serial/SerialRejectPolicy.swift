import Core

/// `--serial-unsafe reject` as a pipeline policy: a code whose frame cannot be built safely is rejected
/// before dispatch, with the reason ("serial: payload has control byte 0x0D at offset 4").
struct SerialRejectPolicy: PayloadPolicy {
    let encoder: SerialFrameEncoder

    func verdict(for symbol: DecodedSymbol) -> Verdict {
        do {
            _ = try encoder.frame(for: symbol)
            return .accepted
        } catch {
            return .rejected(reason: "serial: \(error.reason)")
        }
    }
}

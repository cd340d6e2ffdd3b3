/// Decides, before any sink sees a code, whether it may be sent on: payload filters (length, characters,
/// allow-list) and the serial line's reject policy. A rejected code gets error feedback and is not sent
/// to the door controller.
public protocol PayloadPolicy: Sendable {
    func verdict(for symbol: DecodedSymbol) -> Verdict
}

/// What happens to a text payload byte that could forge or break a frame.
///
/// The default is `reject`: a door controller matches the code it reads against its credential list
/// byte for byte. An escaped code (`12\x0D34`) or a stripped one (`1234` from `12<CR>34`) is not the code
/// that was printed, and stripping can even turn it into a *different valid* credential. Rejecting sends
/// nothing and gives the error feedback, so the person at the door knows the code was refused.
public enum UnsafeBytePolicy: String, CaseIterable, Sendable {
    /// Each unsafe byte becomes `\xNN` (upper-case hex) and `\` becomes `\\`.
    case escape
    /// Unsafe bytes (a whole UTF-8 sequence when one of its bytes is unsafe) are removed.
    case strip
    /// The code is not sent: the event is rejected with the reason (error feedback, logged).
    case reject

    public static var allowedText: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

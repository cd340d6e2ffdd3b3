/// The door relay as an access-control panel drives it (OSDP osdp_OUT): the relay output attaches itself
/// to the daemon's `PanelRelaySlot`, and a controller output (OSDP) commands it through the slot. The slot
/// holds the relay weakly and is replaced at each rebuild, so a reload that reopens either side keeps them
/// connected, and a relay that is closed or gone refuses every command.

/// One command for the relay, as OSDP's output control codes define them (SIA OSDP 2.2, osdp_OUT).
public enum RelayCommand: Equatable, Sendable {
    /// Set the permanent state; `abortTimed`: end a temporary state now (codes 1, 2), otherwise let it
    /// run out first (codes 3, 4).
    case permanent(on: Bool, abortTimed: Bool)
    /// Hold `on` for `milliseconds`, then return to the permanent state (codes 5, 6).
    case temporary(on: Bool, milliseconds: Int)
}

/// A relay the panel can drive.
public protocol PanelDrivenRelay: AnyObject, Sendable {
    /// Records the command for the relay's own thread and returns at once; refused when the relay cannot
    /// act on it (line not held, closing).
    func command(_ command: RelayCommand) -> OutputOffer
    /// True while the relay is energised.
    var isActive: Bool { get }
}

/// Where the door relay (if one is configured) can be found by a controller output. One per daemon,
/// passed in `OutputContext`.
public final class PanelRelaySlot: Sendable {
    private struct Held { weak var relay: (any PanelDrivenRelay)? }
    private let held = PosixMutex(Held())

    public init() {}

    /// The relay output puts itself here when it is built (replacing any earlier one).
    public func attach(_ relay: any PanelDrivenRelay) { held.withLock { $0.relay = relay } }

    /// Takes `relay` out, if it is the one held.
    public func detach(_ relay: any PanelDrivenRelay) {
        held.withLock { if $0.relay === relay { $0.relay = nil } }
    }

    public var relay: (any PanelDrivenRelay)? { held.withLock { $0.relay } }

    public func command(_ command: RelayCommand) -> OutputOffer {
        guard let relay else { return .refused(reason: "no door relay is configured") }
        return relay.command(command)
    }

    public var isActive: Bool { relay?.isActive ?? false }
}

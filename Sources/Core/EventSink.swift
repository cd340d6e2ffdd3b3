/// The sink seam: stdout, serial, GPIO feedback, ALSA beep, sd_notify.
/// `handle` is called on the decode queue and must not block: a sink that does slow I/O keeps its own
/// queue or thread. `close` finishes pending work (bounded) and releases the sink's resources.
public protocol EventSink: AnyObject, Sendable {
    var name: String { get }
    func handle(_ event: ReadEvent)
    func statusChanged(_ status: DaemonStatus)
    /// Lets feedback already started run to its end (a good-read flash, a beep), waiting at most
    /// `timeoutMilliseconds`. Called before `close()` when the daemon ends on its own (end of a replay,
    /// `--oneshot`), not on SIGTERM, which must stop at once.
    func finishPending(timeoutMilliseconds: Int)
    /// Drains pending work (up to the sink's own bound) and releases resources; outputs go inactive.
    func close()
}

extension EventSink {
    public func statusChanged(_ status: DaemonStatus) {}
    public func finishPending(timeoutMilliseconds: Int) {}
}

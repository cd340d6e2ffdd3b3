import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Routes SIGINT/SIGTERM/SIGHUP/SIGUSR1 to closures on a dispatch queue (not in signal context).
/// The sources are kept alive by this object; cancel() restores default handling.
final class SignalHandlers {
    private var sources: [DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "scangate.signals")

    func on(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) {
        for sig in signals {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { handler(sig) }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for s in sources { s.cancel() }
        sources.removeAll()
    }
}

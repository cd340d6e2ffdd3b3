import Core
import Platform
import SerialLine
import Service
import Settings

/// What `run` claims before it opens anything: the daemon lock (one daemon per status socket, see
/// DaemonLock), the metrics file (the same flock on `METRICS-TEXTFILE.lock`, so a daemon with its own
/// socket cannot write `scangate_up 0` over another's file either; taken at start, a reload that moves
/// the file keeps it), and the serial ports of the serial and OSDP outputs (their UUCP lock files, taken
/// for good when each port opens; asked here so a second daemon is refused at once instead of retrying).
enum DaemonClaims {
    struct Refusal: Error {
        let message: String
    }

    /// The locks taken (the daemon's is left out when its directory cannot be written: a warning, and the
    /// daemon runs without it, as the status socket does), or the one-line refusal.
    static func take(_ settings: RunSettings, logger: Logger) -> Result<[DaemonLock], Refusal> {
        let socketSetting = settings.service.statusSocket
        let socket: String? = socketSetting == "off" ? nil : (socketSetting == "auto" ? StatusSocket.defaultPath() : socketSetting)
        let lockPath = DaemonLock.path(statusSocket: socket)
        let shown = socket ?? "off (the default socket's lock)"
        let lock: DaemonLock?
        switch DaemonLock.acquire(path: lockPath) {
        case .success(let taken):
            lock = taken
        case .failure(.held(let pid)):
            let who = pid.map { "another scangate (pid \($0))" } ?? "another scangate"
            return .failure(Refusal(message: "\(who) runs with status socket \(shown) (lock \(lockPath)); "
                                    + "stop it first, or give this one its own status-socket"))
        case .failure(.system(let error)):
            logger.warning("daemon lock: \(error); a second scangate with this status socket is not kept out "
                           + "(set status-socket to a writable path)")
            lock = nil
        }
        var locks = lock.map { [$0] } ?? []
        let metrics = settings.service.metricsTextfile
        if !metrics.isEmpty {
            switch DaemonLock.acquire(path: metrics + ".lock", makeDirectory: false) {
            case .success(let taken):
                locks.append(taken)
            case .failure(.held(let pid)):
                locks.forEach { $0.release() }
                let who = pid.map { "another scangate (pid \($0))" } ?? "another scangate"
                return .failure(Refusal(message: "\(who) writes metrics-textfile \(metrics) (lock \(metrics).lock); "
                                        + "stop it first, or give this one its own metrics-textfile"))
            case .failure(.system(let error)):
                // The metrics file itself will not be writable either: its own error follows.
                logger.warning("metrics lock: \(error)")
            }
        }
        for (key, device) in [("serial", settings.serial.path), ("osdp", settings.osdp.device)] {
            guard let device, !device.isEmpty, let holder = SerialDeviceLock.holder(device: device) else { continue }
            locks.forEach { $0.release() }
            return .failure(Refusal(message: "\(key) port " + SerialPort.inUse(device, pid: holder.pid, lockPath: holder.lockPath)
                                    + "; or give this scangate another \(key) device"))
        }
        return .success(locks)
    }
}

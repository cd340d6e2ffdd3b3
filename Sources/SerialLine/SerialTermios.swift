#if canImport(Glibc)
import Glibc
#endif
import Settings

/// The termios settings of the line (pure: no system call).
struct SerialTermios: Equatable, CustomStringConvertible {
    var baud: SerialBaudRate
    var format: SerialLineFormat
    var rtscts: Bool

    /// `attributes` in raw mode (cfmakeraw: no echo, no line editing, no CR/LF translation, no XON/XOFF)
    /// with this speed and character format, CLOCAL (ignore modem lines) and CREAD, CRTSCTS if asked,
    /// VMIN = VTIME = 0.
    func apply(to attributes: termios) -> termios {
        var t = attributes
        cfmakeraw(&t)
        t.c_cflag &= ~(tcflag_t(CSIZE) | tcflag_t(PARENB) | tcflag_t(PARODD) | tcflag_t(CSTOPB)
                       | tcflag_t(CRTSCTS))
        t.c_cflag |= SerialTermios.characterSize(format.dataBits) | tcflag_t(CLOCAL) | tcflag_t(CREAD)
        switch format.parity {
        case .none: break
        case .even: t.c_cflag |= tcflag_t(PARENB)
        case .odd: t.c_cflag |= tcflag_t(PARENB) | tcflag_t(PARODD)
        }
        if format.stopBits == 2 { t.c_cflag |= tcflag_t(CSTOPB) }
        if rtscts { t.c_cflag |= tcflag_t(CRTSCTS) }
        withUnsafeMutableBytes(of: &t.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        _ = cfsetspeed(&t, baud.speed)
        return t
    }

    /// What `attributes` say about the line, or nil if the speed is not one of the standard rates.
    init?(reading attributes: termios) {
        var t = attributes
        guard let bps = SerialBaudRate.bitsPerSecond(forSpeed: cfgetospeed(&t)), let baud = SerialBaudRate(bps)
        else { return nil }
        let size = t.c_cflag & tcflag_t(CSIZE)
        let dataBits = (5...8).first { SerialTermios.characterSize($0) == size } ?? 8
        let parity: SerialLineFormat.Parity =
            t.c_cflag & tcflag_t(PARENB) == 0 ? .none : (t.c_cflag & tcflag_t(PARODD) != 0 ? .odd : .even)
        let stopBits = t.c_cflag & tcflag_t(CSTOPB) != 0 ? 2 : 1
        guard let format = SerialLineFormat(dataBits: dataBits, parity: parity, stopBits: stopBits) else { return nil }
        self.init(baud: baud, format: format, rtscts: t.c_cflag & tcflag_t(CRTSCTS) != 0)
    }

    init(baud: SerialBaudRate, format: SerialLineFormat, rtscts: Bool) {
        self.baud = baud
        self.format = format
        self.rtscts = rtscts
    }

    /// "115200 baud 7E1 rtscts".
    var description: String { "\(baud) baud \(format)" + (rtscts ? " rtscts" : "") }

    static func characterSize(_ dataBits: Int) -> tcflag_t {
        switch dataBits {
        case 5: return tcflag_t(CS5)
        case 6: return tcflag_t(CS6)
        case 7: return tcflag_t(CS7)
        default: return tcflag_t(CS8)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Components
import SerialLine
import Settings

/// Doctor's serial rows: the `--serial` port opened and configured the way the serial sink opens it
/// (speed, format and flow control read back from the driver), and with `--test-frame` one frame with the
/// payload "SCANGATE-TEST" written through the configured framing and waited for until transmitted.
struct SerialDoctor {
    let settings: SerialSettings
    let options: DoctorOptions
    let system: any SerialSystemCalls

    func run() -> [DoctorRow] {
        guard let path = settings.path else { return [] }
        let port: SerialPort
        do throws(SystemError) {
            port = try SerialPort.open(path: path, line: SerialLineConfig(settings), system: system)
        } catch {
            return [.fail(.serial, "serial port", "\(error)", fix: fix(error, path: path))]
                + (options.testFrame ? [.skip(.serial, "serial frame", "not tried: serial port failed")] : [])
        }
        defer { port.close() }
        var rows = [DoctorRow.pass(.serial, "serial port", "\(path): \(port.lineDescription) (read back), "
                                   + "\(settings.framing.rawValue) framing" + (settings.rs485 ? ", RS-485" : ""))]
        guard options.testFrame else { return rows }
        let symbol = DecodedSymbol(symbology: .qr, data: Array(DoctorOptions.testPayload.utf8),
                                   bounds: Rect(x: 0, y: 0, w: 0, h: 0))
        let frame: [UInt8]
        do throws(SerialPayloadRejection) {
            frame = try SerialFrameEncoder(settings: settings).frame(for: symbol)
        } catch {
            rows.append(.fail(.serial, "serial frame", "cannot frame \(DoctorOptions.testPayload): \(error)",
                              fix: "check --serial-unsafe and --serial-format"))
            return rows
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: Double(max(1, settings.writeTimeoutMs)))
        let shown = CEscapedText.render(frame)
        switch port.write(frame, deadline: { deadline }, now: { MonotonicInstant.now() }) {
        case .sent:
            rows.append(.pass(.serial, "serial frame", "wrote \(frame.count) bytes: \(shown)"))
        case .timedOut(let written):
            rows.append(.fail(.serial, "serial frame",
                              "not transmitted within \(settings.writeTimeoutMs) ms (\(written) of \(frame.count) bytes written)",
                              fix: settings.rtscts
                                ? "the peer holds CTS low: check the RTS/CTS wiring, or drop --serial-rtscts"
                                : "the port does not send: check the adapter and --serial-write-timeout-ms"))
        case .lost(let errno, _), .failed(let errno, _):
            let error = SystemError("write", path, errno)
            rows.append(.fail(.serial, "serial frame", "\(error)", fix: fix(error, path: path)))
        }
        return rows
    }

    private func fix(_ error: SystemError, path: String) -> String {
        if error.errno == .invalidArgument && error.operation.hasPrefix("set ") {
            return "the port does not take \(settings.baud) baud \(settings.format): use a setting the adapter "
                + "supports (--serial-baud, --serial-format)"
        }
        if error.operation.contains("RS-485") {
            return "the UART has no RS-485 mode: use an adapter that switches direction itself and drop --serial-rs485"
        }
        if error.errno.rawValue == ENOTTY {
            return "\(path) is not a serial port: give --serial a tty (/dev/ttyUSB0, /dev/ttyAMA0, /dev/serial/by-id/...)"
        }
        return DoctorFixes.forOpen(error.errno, device: path, group: DoctorFixes.serialGroup,
                                   missing: DoctorFixes.serialMissing(path))
            ?? "check the port with `dmesg` and `stty -F \(path)`"
    }
}

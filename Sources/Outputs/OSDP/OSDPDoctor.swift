import Components
import Core
import Platform
import SerialLine
import Settings
import Synchronization

extension OSDPOutput {
    /// Doctor's rows on what the security settings give up: `osdp-secure = optional` (a warning), and
    /// `osdp-install-mode` when it is on (a warning while it is open, a pass when a key makes it inert).
    static func securityRows(_ settings: RunSettings, firmware: [UInt8]) -> [DoctorRow] {
        let osdp = settings.osdp
        var rows: [DoctorRow] = []
        if osdp.secure == .optional {
            rows.append(.warn(.osdp, "osdp secure mode", "plain text allowed: any device on the bus may move the reader with a plain-text COMSET (another address and speed, kept across restarts) and take the card reads with plain-text POLLs",
                              fix: "set osdp-secure = required once the panel uses the secure channel"))
        }
        guard osdp.installMode && osdp.secure != .off else { return rows }
        let startup: OSDPStartup
        do throws(UsageError) {
            startup = try OSDPStartup.resolve(osdp, features: features(settings), firmware: firmware)
        } catch {
            rows.append(.fail(.osdp, "osdp install mode", error.message, fix: "correct the key or state file as the message says"))
            return rows
        }
        switch startup.installMode {
        case .off:
            break
        case .open:
            rows.append(.warn(.osdp, "osdp install mode", "open: no key in \(osdp.scbkFile) yet; the first device on the bus to open the secure channel with the default key SCBK-D and send KEYSET owns the reader",
                              fix: "let the panel enrol the reader now (install mode ends for good with its KEYSET), then set osdp-install-mode = no"))
        case .inert(let check, _):
            rows.append(.pass(.osdp, "osdp install mode", "on but inert: \(osdp.scbkFile) holds a key (check value \(Hex.string(check))), so the default key SCBK-D is refused; set osdp-install-mode = no"))
        }
        return rows
    }

    /// Doctor's rows: the port opened as `run` opens it; what a passive listener hears for the capture
    /// time (which addresses the panel polls, secure or not); and, with the secure channel on, whether it
    /// comes up when ScanGate answers as the reader for a few seconds.
    static func doctorRows(_ settings: RunSettings, context: DoctorContext, system: any SerialSystemCalls,
                           firmware: [UInt8]) -> [DoctorRow] {
        let osdp = settings.osdp
        guard let device = osdp.device else { return [] }
        let line = SerialLineConfig(baud: SerialBaudRate(osdp.baud) ?? .default9600, rs485: osdp.rs485)
        let port: SerialPort
        do throws(SystemError) {
            port = try SerialPort.open(path: device, line: line, system: system)
        } catch {
            let fix = DoctorFixes.forOpen(error.errno, device: device, group: DoctorFixes.serialGroup,
                                          missing: DoctorFixes.serialMissing(device))
                ?? "check the adapter with `dmesg` and `stty -F \(device)`"
            return [.fail(.osdp, "osdp port", "\(error)", fix: fix),
                    .skip(.osdp, "osdp polls", "not tried: osdp port failed")]
        }
        var rows = [DoctorRow.pass(.osdp, "osdp port", "\(device): \(port.lineDescription), address \(osdp.address)"
                                   + (osdp.rs485 ? ", RS-485" : ""))]
        var reader = OSDPFrameReader()
        var summary = OSDPBusSummary()
        let end = MonotonicInstant.now().adding(milliseconds: context.options.captureSeconds * 1000)
        while MonotonicInstant.now() < end {
            switch port.read(maxBytes: 512, deadline: { end }, now: { MonotonicInstant.now() }) {
            case .bytes(let bytes): summary.add(reader.feed(bytes, at: .now()))
            case .timedOut, .lost, .failed: break
            }
        }
        port.close()
        let ours = UInt8(osdp.address)
        if summary.commandsByAddress[ours] != nil {
            rows.append(.pass(.osdp, "osdp polls", summary.description))
        } else {
            let fix = summary.commandsByAddress.isEmpty
                ? "no panel is heard: check A/B (swap them if unsure), the ground, termination, osdp-baud \(osdp.baud) against the panel's port setting, and that the panel's reader port is enabled"
                : "the panel polls other addresses: set osdp-address to the one the panel expects, or enrol address \(osdp.address) on the panel"
            rows.append(.fail(.osdp, "osdp polls", "none for address \(osdp.address) in \(format(context.options.captureSeconds)) s: \(summary.description)", fix: fix))
            return rows
        }
        guard osdp.secure != .off else { return rows }
        rows.append(secureChannelRow(settings, context: context, system: system, firmware: firmware))
        return rows
    }

    private static func secureChannelRow(_ settings: RunSettings, context: DoctorContext, system: any SerialSystemCalls,
                                         firmware: [UInt8]) -> DoctorRow {
        let quietFeedback = DoctorNoFeedback()
        let output: OSDPOutput
        do {
            output = try OSDPOutput(settings: settings.osdp, features: features(settings), feedback: quietFeedback,
                                    linkObserver: quietFeedback, logger: context.logger, firmware: firmware, system: system)
        } catch {
            return .fail(.osdp, "osdp secure channel", "\(error)", fix: "correct the key file as the message says")
        }
        let end = MonotonicInstant.now().adding(milliseconds: 8000)
        var health = output.health
        while MonotonicInstant.now() < end {
            health = output.health
            if health.state == .ok { break }
            sleepThread(milliseconds: 50)
        }
        output.close(deadline: .now().adding(milliseconds: 1000))
        if health.state == .ok { return .pass(.osdp, "osdp secure channel", health.detail) }
        return .fail(.osdp, "osdp secure channel", "not up within 8 s: \(health.lastError ?? health.detail)",
                     fix: "the panel's key and osdp-scbk-file must be the same key; to enrol a new reader, set osdp-install-mode = true once and let the panel send its key")
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

/// Doctor runs the reader without playing the panel's LED and buzzer commands or changing the status.
private final class DoctorNoFeedback: FeedbackSink, ControllerLinkObserver {
    func play(_ request: FeedbackRequest, origin: String) {}
    func controllerLink(_ output: String, online: Bool, detail: String) {}
}

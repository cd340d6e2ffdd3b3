import Components
import GPIO
import Core
import Platform
import SerialLine
import Settings
import Synchronization

extension DoctorPart {
    public static let osdp = DoctorPart("osdp")
}

/// The Wiegand bits for a read (osdp-card-format = wiegand), built by whoever knows the Wiegand encoder.
public typealias OSDPWiegandBits = @Sendable (RunSettings) -> (@Sendable (ReadEvent) -> Result<[Bool], OSDPCardRefusal>)?

extension OSDPOutput {
    /// What the reader really has, for osdp_PDCAP: the LED lines and a buzzer or a beep.
    public static func features(_ settings: RunSettings) -> OSDPReaderFeatures {
        let lines = settings.gpio.chip == nil ? [:] : settings.gpio.lines
        let leds: OSDPReaderFeatures.LEDs = lines[.green] != nil && lines[.red] != nil ? .redGreen
            : (lines[.green] != nil || lines[.red] != nil ? .oneColor : .none)
        return OSDPReaderFeatures(leds: leds, buzzer: lines[.buzzer] != nil || settings.beep.enabled,
                                  outputs: settings.doorRelay.isEnabled ? 1 : 0)
    }

    /// The `[osdp]` door output: a reader (PD) on the panel's RS-485 line.
    public static func component(system: any SerialSystemCalls = GlibcSerialSystemCalls(), gpiod: any GpiodCalls = SystemGpiodCalls(),
                                 firmware: [UInt8], wiegandBits: @escaping OSDPWiegandBits) -> Component {
        Component(
            name: "osdp", options: OptionTable.osdp,
            role: .output(OutputFactory(
                isConfigured: { $0.osdp.device != nil },
                sameSettings: { a, b in
                    a.effectiveOSDP == b.effectiveOSDP && features(a) == features(b)
                        && (a.osdp.cardFormat == .raw || a.effectiveWiegand == b.effectiveWiegand)
                },
                validate: { settings in try settings.effectiveOSDP.validate() },
                make: { settings, context in
                    try OSDPOutput(settings: settings.effectiveOSDP, features: features(settings), feedback: context.feedback,
                                   linkObserver: context.links, logger: context.logger, firmware: firmware,
                                   wiegandBits: settings.osdp.cardFormat == .wiegand ? wiegandBits(settings) : nil,
                                   relay: context.relay, system: system, gpiod: gpiod, configFile: context.configFile,
                                   scene: context.scene)
                })),
            lineClaims: { settings in
                let o = settings.effectiveOSDP
                guard o.device != nil, let chip = o.inputChip else { return [] }
                return o.inputLines.map { GPIOLineClaim(section: "osdp", option: $0.option, chip: chip, line: $0.line) }
            },
            doctor: { settings, context in
                guard settings.osdp.device != nil else { return [] }
                return securityRows(settings, firmware: firmware)
                    + doctorRows(settings, context: context, system: system, firmware: firmware)
            })
    }
}

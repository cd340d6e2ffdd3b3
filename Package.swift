// swift-tools-version:6.0
// ScanGate: headless QR/barcode scanning daemon for Raspberry Pi-class kiosks.
//
// The folder list under Sources/ is the pipeline:
//   1 Sources (Simulator, Replay, Camera) → 2 handoff and 3 decode queue (Pipeline, Decoding)
//   → 4 Debounce → 5 Policies → 6 Outputs/ (Stdout, Serial, ...) and 7 Feedback (GPIO, Sound)
// with Platform and Core underneath, Settings (values only) and Config (INI + flags) beside, each
// output and feedback device registered once (Components, Catalog), and Service, Doctor, Preview (the
// installer's live page) and Tools
// around them. App is the commands' wiring.
import PackageDescription

/// A Debian C library imported through pkg-config.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/CLibraries/\(name)", pkgConfig: pkgConfig,
                   providers: [.apt([apt])])
}

let swiftSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "ScanGate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "scangate", targets: ["scangate"]),
    ],
    targets: [
        // Debian C libraries.
        systemLibrary("CZbar", pkgConfig: "zbar", apt: "libzbar-dev"),
        systemLibrary("CV4L2", pkgConfig: "libv4l2", apt: "libv4l-dev"),
        systemLibrary("CGpiod", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CQREncode", pkgConfig: "libqrencode", apt: "libqrencode-dev"),
        systemLibrary("CInih", pkgConfig: "inih", apt: "libinih-dev"),
        systemLibrary("CSystemd", pkgConfig: "libsystemd", apt: "libsystemd-dev"),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        systemLibrary("CPNG", pkgConfig: "libpng", apt: "libpng-dev"),
        systemLibrary("COpenSSL", pkgConfig: "libcrypto", apt: "libssl-dev"),
        systemLibrary("CMosquitto", pkgConfig: "libmosquitto", apt: "libmosquitto-dev"),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),
        // What Swift cannot import: function-like macros, variadic calls, C-only globals.
        .target(name: "CShim", dependencies: ["CV4L2", "CALSA", "CZbar"]),
        // zxing-cpp (Debian libzxing-dev, C++) behind a C header: the live decoder, decode-image's second, and its writer.
        .target(name: "CZXingShim", linkerSettings: [.linkedLibrary("ZXing")]),

        // Typed wrappers over syscalls: Errno, file descriptors, EINTR retry, threads, clocks, hex.
        .target(name: "Platform", dependencies: ["CShim"], swiftSettings: swiftSettings),
        // Shared vocabulary: frames, symbols, read events, status; the seams (FrameSource, Output,
        // DoorOutput, ReportOutput, ReadPolicy, FeedbackSink, FeedbackDevice); JSON; logging.
        .target(name: "Core", dependencies: ["Platform"], swiftSettings: swiftSettings),
        // Workers: a named thread with a bounded mailbox and one way to stop; services stopped in reverse order.
        .target(name: "Runtime", dependencies: ["Core", "Platform"], swiftSettings: swiftSettings),
        // Settings: a plain value per section with its defaults, and the options that set it. No device code.
        .target(name: "Settings", dependencies: ["Core", "Platform"], swiftSettings: swiftSettings),
        // INI file + command line → Settings (libinih).
        .target(name: "Config", dependencies: ["Core", "Platform", "Settings", "CInih"], swiftSettings: swiftSettings),
        // Image files: PGM, PNG, JPEG, Y4M (read), PNG/PGM (write).
        .target(name: "Images", dependencies: ["Core", "Platform", "CPNG", "CTurboJPEG"], swiftSettings: swiftSettings),

        // 1. Sources: the simulator, replay, the V4L2 camera.
        .target(name: "Simulator", dependencies: ["Core", "Platform", "Settings", "Images", "CQREncode", "CZXingShim"], swiftSettings: swiftSettings),
        .target(name: "Replay", dependencies: ["Core", "Platform", "Settings", "Images"], swiftSettings: swiftSettings),
        .target(name: "Camera", dependencies: ["Core", "Settings", "Platform", "CShim", "CV4L2", "CTurboJPEG"],
                swiftSettings: swiftSettings),
        // 3. The stream decoders (zxing-cpp, zbar), the change gate, the normaliser.
        .target(name: "Decoding", dependencies: ["Core", "Settings", "Platform", "CZbar", "CShim", "CZXingShim"],
                swiftSettings: swiftSettings),
        // 4. Report-once rules.
        .target(name: "Debounce", dependencies: ["Core", "Platform", "Settings"], swiftSettings: swiftSettings),
        // 5. Policies on the credential itself: the payload filters, and signed passes verified offline
        // (with their Token Status Lists, inflated by zlib).
        .target(name: "Policies", dependencies: ["Core", "Settings"], swiftSettings: swiftSettings),
        .target(name: "Credentials", dependencies: ["Core", "Platform", "Settings", "Components", "COpenSSL", "CZlib"],
                swiftSettings: swiftSettings),
        // 2-5. Capture thread, newest-frame handoff, the decode queue, the dispatcher (policies → door
        // outputs → report outputs → feedback).
        .target(name: "Pipeline", dependencies: ["Core", "Platform", "Decoding", "Debounce"], swiftSettings: swiftSettings),

        // Drivers that feedback and the outputs use.
        .target(name: "GPIO", dependencies: ["Settings", "Platform", "CGpiod"], swiftSettings: swiftSettings),
        // The one fake of the gpiod calls (chips in memory, sets recorded with their time, edges injected):
        // for the unit tests and the bench (Tools), in a target of its own so no driver or output links it.
        .target(name: "MemoryGPIO", dependencies: ["Core", "GPIO", "Platform"], swiftSettings: swiftSettings),
        .target(name: "Sound", dependencies: ["Core", "Platform", "Runtime", "Settings", "CALSA", "CShim"], swiftSettings: swiftSettings),
        .target(name: "SerialLine", dependencies: ["Settings", "Platform", "CShim"], swiftSettings: swiftSettings),

        // How an output or feedback device registers: its options, factory and doctor check.
        .target(name: "Components", dependencies: ["Core", "Platform", "Settings"], swiftSettings: swiftSettings),
        // 6. Outputs, one folder each.
        .target(name: "Stdout", dependencies: ["Core", "Platform", "Runtime", "Settings", "Components"], path: "Sources/Outputs/Stdout",
                swiftSettings: swiftSettings),
        .target(name: "Serial", dependencies: ["Core", "Platform", "Settings", "Components", "Runtime", "SerialLine"], path: "Sources/Outputs/Serial",
                swiftSettings: swiftSettings),
        // OSDP v2 peripheral device (a reader on a panel's RS-485 line): frames, secure channel, the PD.
        // GPIO inputs watched on a thread with debounce (the OSDP reader's tamper, power and door contact).
        .target(name: "InputLines", dependencies: ["Core", "Platform", "Runtime", "Settings", "GPIO"], swiftSettings: swiftSettings),
        .target(name: "OSDP", dependencies: ["Core", "Platform", "Settings", "Components", "Runtime", "SerialLine", "COpenSSL", "GPIO", "InputLines"],
                path: "Sources/Outputs/OSDP", swiftSettings: swiftSettings),
        // Wiegand on two GPIO lines (formats, number mapping, a real-time transmitter) and the panel's LED
        // and beeper inputs.
        .target(name: "Wiegand", dependencies: ["Core", "Platform", "Runtime", "Settings", "Components", "GPIO", "InputLines"],
                path: "Sources/Outputs/Wiegand", swiftSettings: swiftSettings),
        // A door strike's relay on one GPIO line, pulsed for each accepted read (a door with no panel).
        .target(name: "DoorRelay", dependencies: ["Core", "Platform", "Settings", "Components", "Runtime", "GPIO"],
                path: "Sources/Outputs/DoorRelay", swiftSettings: swiftSettings),
        // MQTT to the fleet's broker (libmosquitto): events, state, commands, a spool that loses nothing.
        .target(name: "MQTT", dependencies: ["Core", "Platform", "Runtime", "Settings", "Components", "CMosquitto", "COpenSSL", "CShim"],
                path: "Sources/Outputs/MQTT", swiftSettings: swiftSettings),
        // 7. Feedback: the one door in; GPIO and the beep play.
        .target(name: "Feedback", dependencies: ["Core", "Platform", "Runtime", "Settings", "Components", "GPIO", "Sound"],
                swiftSettings: swiftSettings),
        // Every output and feedback device, once.
        .target(name: "Catalog", dependencies: ["Core", "Settings", "Components", "Policies", "Camera", "Simulator", "Replay",
                                                "Stdout", "Serial", "SerialLine", "Wiegand", "OSDP", "MQTT", "DoorRelay", "Feedback", "GPIO",
                                                "Sound", "Credentials"],
                swiftSettings: swiftSettings),

        // systemd integration: sd_notify, watchdog, the journal lines.
        .target(name: "Service", dependencies: ["Core", "Platform", "Runtime", "CSystemd"], swiftSettings: swiftSettings),
        // `scangate preview`'s HTTP server (libmicrohttpd): the page, the MJPEG stream, the bounds and the token.
        .target(name: "Preview", dependencies: ["Core", "Platform", "CMicroHTTPD"], swiftSettings: swiftSettings),
        // `scangate doctor`: every configured device probed as `run` would use it.
        .target(name: "Doctor", dependencies: ["Core", "Platform", "Settings", "Config", "Components", "Catalog", "Camera",
                                               "Simulator", "Decoding", "Pipeline", "GPIO", "Sound", "SerialLine", "Serial",
                                               "Credentials"],
                swiftSettings: swiftSettings),
        // Tools outside the decode path of `run`, one target each:
        // still images (decode-image: zbar and zxing-cpp, label unwarping, corpus scoring),
        .target(name: "StillImages", dependencies: ["Core", "Platform", "Settings", "Images", "Decoding"],
                path: "Sources/Tools/StillImages", swiftSettings: swiftSettings),
        // the daemon run as a child process and the soak that watches its memory and descriptors,
        .target(name: "Soak", dependencies: ["Core", "Platform"], path: "Sources/Tools/Soak", swiftSettings: swiftSettings),
        // and `bench`: the pipeline and each output timed on the devices they drive, and the decoders scored on
        // the live-path frames.
        .target(name: "Bench", dependencies: ["Core", "Platform", "Settings", "Images", "Decoding", "StillImages", "Debounce", "Pipeline", "Simulator",
                                              "Stdout", "Serial", "Wiegand", "OSDP", "Credentials", "MQTT", "GPIO", "MemoryGPIO",
                                              "Feedback", "Soak", "CShim"],
                path: "Sources/Tools/Bench", swiftSettings: swiftSettings),
        // The commands (run, doctor, decode-image, make-code, ...): wiring only.
        .target(name: "App", dependencies: ["Core", "Platform", "Runtime", "Settings", "Config", "Images", "Simulator",
                                            "Camera", "Decoding", "Debounce", "Pipeline", "Components",
                                            "Catalog", "Feedback", "Service", "Doctor", "StillImages", "Bench", "Soak", "Wiegand",
                                            "Credentials", "MQTT", "SerialLine", "Preview", "CShim"],
                swiftSettings: swiftSettings),
        .executableTarget(name: "scangate", dependencies: ["App"], swiftSettings: swiftSettings),

        .testTarget(name: "ScanGateTests",
                    dependencies: ["Core", "Platform", "Runtime", "Settings", "Config", "Images", "Simulator", "Replay", "Camera",
                                   "Decoding", "Debounce", "Policies", "Pipeline", "GPIO", "MemoryGPIO", "Sound", "SerialLine",
                                   "Components", "Stdout", "Serial", "Wiegand", "Feedback", "Catalog", "Service", "Doctor",
                                   "StillImages", "Bench", "App", "CShim", "CV4L2", "CPNG", "CTurboJPEG", "CQREncode", "CZXingShim", "OSDP", "Credentials", "MQTT", "DoorRelay", "Preview"],
                    // Peer scripts (Python, run from .build/venv) and the fixtures they produced.
                    exclude: ["Peers", "Fixtures"],
                    swiftSettings: swiftSettings),
    ],
    cxxLanguageStandard: .cxx17
)

// libFuzzer targets (Tests/Fuzz): one executable, built only when SCANGATE_FUZZ=1 (by Tests/Fuzz/run,
// in its own --build-path with -sanitize=fuzzer,address), so ordinary builds do not compile or link it.
if Context.environment["SCANGATE_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(name: "ScanGateFuzz",
                          dependencies: ["Core", "Platform", "Settings", "Config", "Images", "Decoding", "StillImages", "Pipeline", "Stdout",
                                         "Serial", "Wiegand", "Replay", "Simulator", "OSDP", "Credentials", "MQTT", "Policies", "Components"],
                          path: "Tests/Fuzz/Sources", swiftSettings: swiftSettings))
}

// The ThreadSanitizer canary (Tests/Sanitizers/Canary): a deliberate race next to a lock body that the
// sanitizer run must report, and a locked counter that must give none. Built only when
// SCANGATE_SANITIZER_CANARY=1 (by Tests/Sanitizers/run), so ordinary builds do not compile it.
if Context.environment["SCANGATE_SANITIZER_CANARY"] == "1" {
    package.targets.append(
        .executableTarget(name: "sanitizer-canary", dependencies: ["Core", "Platform"],
                          path: "Tests/Sanitizers/Canary", swiftSettings: swiftSettings))
}

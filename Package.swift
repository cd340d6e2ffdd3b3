// swift-tools-version:6.0
// ScanGate: headless QR/barcode scanning daemon for Raspberry Pi-class kiosks.
//
// The folder list under Sources/ is the pipeline:
//   Capture (frames, V4L2 camera, simulator, replay) → Pipeline (handoff, decode queue)
//   → Decoding (zbar) → Debounce → Outputs (stdout), Serial, GPIO, Sound
// with Platform (syscall wrappers), Images (PNG/JPEG/PGM/Y4M), Config and Service around them.
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
        systemLibrary("CCbor", pkgConfig: "libcbor", apt: "libcbor-dev"),
        // What Swift cannot import: function-like macros, variadic calls, C-only globals.
        .target(name: "CShim", dependencies: ["CV4L2", "CALSA", "CZbar"]),
        // zxing-cpp (Debian libzxing-dev, C++) behind a C header: the second decoder of decode-image.
        .target(name: "CZXingShim", linkerSettings: [.linkedLibrary("ZXing")]),

        // Typed wrappers over syscalls: Errno, file descriptors, EINTR retry, signals.
        .target(name: "Platform", dependencies: ["CShim"], swiftSettings: swiftSettings),
        // Shared vocabulary: frames, symbols, events, the seams (FrameSource, Decoder, EventSink), logging.
        .target(name: "Core", dependencies: ["Platform"], swiftSettings: swiftSettings),
        // Image files: PGM, PNG, JPEG, Y4M (read), PNG/PGM (write).
        .target(name: "Images", dependencies: ["Core", "CPNG", "CTurboJPEG"], swiftSettings: swiftSettings),
        // Frame sources.
        .target(name: "Simulator", dependencies: ["Core", "Images", "CQREncode"], swiftSettings: swiftSettings),
        .target(name: "Replay", dependencies: ["Core", "Images"], swiftSettings: swiftSettings),
        .target(name: "Camera", dependencies: ["Core", "Platform", "CShim", "CV4L2", "CTurboJPEG"],
                swiftSettings: swiftSettings),
        // Decoder seam and the zbar decoder.
        .target(name: "Decoding", dependencies: ["Core", "Platform", "Images", "CZbar", "CShim", "CZXingShim"],
                swiftSettings: swiftSettings),
        // Report-once rules.
        .target(name: "Debounce", dependencies: ["Core"], swiftSettings: swiftSettings),
        // Capture thread, newest-frame handoff, the decode queue, fan-out to sinks.
        .target(name: "Pipeline", dependencies: ["Core", "Decoding", "Debounce"], swiftSettings: swiftSettings),
        // Sinks.
        .target(name: "Outputs", dependencies: ["Core"], swiftSettings: swiftSettings),
        .target(name: "Serial", dependencies: ["Core", "Platform", "CShim"], swiftSettings: swiftSettings),
        .target(name: "GPIO", dependencies: ["Core", "Platform", "CGpiod"], swiftSettings: swiftSettings),
        .target(name: "Sound", dependencies: ["Core", "CALSA", "CShim"], swiftSettings: swiftSettings),
        // Settings: command-line flags and the INI file, one table of options.
        .target(name: "Config", dependencies: ["Core", "Decoding", "Debounce", "Pipeline", "Outputs",
                                               "Serial", "GPIO", "Sound", "Camera", "Simulator", "Replay",
                                               "CInih"],
                swiftSettings: swiftSettings),
        // The fleet connection: MQTT through libmosquitto, the on-disk event spool, commands, Home Assistant.
        .target(name: "Fleet", dependencies: ["Core", "Platform", "CMosquitto", "COpenSSL"], swiftSettings: swiftSettings),
        // systemd integration: sd_notify, watchdog.
        .target(name: "Service", dependencies: ["Core", "CSystemd"], swiftSettings: swiftSettings),
        // `scangate bench`: throughput, idle cost, latency, memory, start-up, as ratios measured in one run.
        .target(name: "Bench", dependencies: ["Core", "Platform", "CShim", "Simulator", "Decoding", "Debounce", "Pipeline",
                                              "Outputs", "Serial", "GPIO", "Fleet"],
                swiftSettings: swiftSettings),
        // The commands (run, decode-image, make-code, ...), composed from all of the above.
        .target(name: "App", dependencies: ["Core", "Platform", "Images", "Simulator", "Replay", "Camera",
                                            "Decoding", "Debounce", "Pipeline", "Outputs", "Serial",
                                            "GPIO", "Sound", "Config", "Service", "Bench"],
                swiftSettings: swiftSettings),
        .executableTarget(name: "scangate", dependencies: ["App"], swiftSettings: swiftSettings),

        .testTarget(name: "ScanGateTests",
                    dependencies: ["Core", "Platform", "Images", "Simulator", "Replay", "Camera", "Decoding",
                                   "Debounce", "Pipeline", "Outputs", "Serial", "GPIO", "Sound", "Config",
                                   "Service", "App", "Bench", "CShim", "Fleet"],
                    swiftSettings: swiftSettings),
    ],
    cxxLanguageStandard: .cxx17
)

// libFuzzer targets (Tests/Fuzz): one executable, built only when SCANGATE_FUZZ=1 (by Tests/Fuzz/run,
// in its own --build-path with -sanitize=fuzzer,address), so ordinary builds do not compile or link it.
if Context.environment["SCANGATE_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(name: "ScanGateFuzz",
                          dependencies: ["Core", "Config", "Images", "Decoding", "Pipeline", "Outputs", "Serial", "Fleet"],
                          path: "Tests/Fuzz/Sources", swiftSettings: swiftSettings))
}

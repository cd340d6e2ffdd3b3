import Platform

/// What `scangate list-cameras` prints about one node: name, driver, stable names, formats with sizes
/// and rates, and controls with their range, default and current value.
public enum CameraListing {
    /// The description of a capture node, or nil when the node is not a video capture device
    /// (an output, metadata or codec node). Errors name the device.
    public static func describe(_ path: String, links: [String], calls: any V4L2Calls,
                                allControls: Bool) throws(SystemError) -> String? {
        let device = try V4L2Device.open(path, calls: calls).get()
        defer { _ = device.close() }
        let capability = try device.capability().get()
        guard capability.canCapture else { return nil }
        var lines = ["\(path): \(capability.card) (driver \(capability.driver), bus \(capability.busInfo))"]
        for link in links { lines.append("  by-id: \(link)") }
        if !capability.canStream { lines.append("  cannot stream: ScanGate cannot use it") }
        let offers = try CameraOffers.query(device)
        lines.append("  formats:" + (offers.formats.isEmpty ? " none" : ""))
        for format in offers.formats {
            let d = format.description
            let usable = LumaLayout(d.fourcc) != nil ? "" : ", not readable by ScanGate"
            lines.append("    \(d.fourcc) (\(d.name)\(d.compressed ? ", compressed" : "")\(usable)): "
                         + CameraOffers.sizesText(format, separator: ", "))
        }
        let controls = CameraControls(device: device)
        let listed = try controls.list().filter { allControls || $0.mattersForScanning }
        lines.append("  controls" + (allControls ? "" : " (scanning-related; --all-controls for every one)") + ":"
                     + (listed.isEmpty ? " none" : ""))
        for c in listed {
            let current: String
            switch controls.value(c) {
            case .success(let v): current = String(v)
            case .failure(let e): current = "unreadable (\(e.errno))"
            }
            var flags: [String] = []
            if c.isReadOnly { flags.append("read-only") }
            if c.isInactive { flags.append("inactive") }
            lines.append("    \(c.key) (\(c.kind.name)): min \(c.minimum) max \(c.maximum) step \(c.step) "
                         + "default \(c.defaultValue) current \(current)"
                         + (flags.isEmpty ? "" : " [\(flags.joined(separator: ", "))]"))
        }
        return lines.joined(separator: "\n")
    }

    /// "USB Camera (driver uvcvideo): YUYV 640x480 (30, 15 fps); MJPG ..." for `scangate doctor`: the
    /// card, the driver and what the node offers. nil when the node is not a video capture device.
    public static func offersSummary(_ path: String, calls: any V4L2Calls) throws(SystemError) -> String? {
        let device = try V4L2Device.open(path, calls: calls).get()
        defer { _ = device.close() }
        let capability = try device.capability().get()
        guard capability.canCapture else { return nil }
        let offers = try CameraOffers.query(device)
        return "\(capability.card) (driver \(capability.driver)): \(offers.summary)"
    }
}

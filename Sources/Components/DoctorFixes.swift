#if canImport(Glibc)
import Glibc
#endif
import Platform

/// The fix doctor prints for a failed open of a device node, by errno: permissions, a missing device,
/// a device someone else holds. `group` is the group the service user needs for this kind of device.
public enum DoctorFixes {
    public static let serviceUser = "scangate"

    /// What to do about `errno` when opening `device`. `missing` is the fix for ENOENT/ENODEV (it differs
    /// per kind of device); nil when the errno says nothing specific.
    public static func forOpen(_ errno: Errno, device: String, group: String, missing: String) -> String? {
        switch errno.rawValue {
        case EACCES, EPERM:
            return "add user \(serviceUser) to group \(group) (sudo adduser \(serviceUser) \(group)), "
                + "and run doctor as that user: sudo -u \(serviceUser) scangate doctor ..."
        case ENOENT, ENODEV, ENXIO:
            return missing
        case EBUSY:
            return "held by another process (fuser -v \(device)); stop it first, e.g. sudo systemctl stop scangate"
        default:
            return nil
        }
    }

    public static func cameraMissing(_ device: String, present: [String]) -> String {
        "device missing: check the cable, `scangate list-cameras` ("
            + (present.isEmpty ? "no /dev/video* here" : "here: " + present.joined(separator: ", "))
            + ") and the udev rule (udev/60-scangate-camera.rules gives /dev/scangate-camera)"
    }

    public static func serialMissing(_ device: String) -> String {
        "device missing: check the cable or USB adapter, `ls -l /dev/serial/by-id/`, "
            + "and the udev rule (udev/60-scangate-serial.rules gives /dev/scangate-serial)"
    }

    public static let gpioGroup = "gpio"
    public static let videoGroup = "video"
    public static let serialGroup = "dialout"
    public static let soundGroup = "audio"
}

#if canImport(Glibc)
import Glibc
#endif

/// Which V4L2 calls this process uses: libv4l2's, unless libcamera's V4L2 compatibility layer is
/// preloaded (`libcamerify scangate ...`), which only sees calls made through libc.
public enum SystemV4L2 {
    /// True when LD_PRELOAD (as given) names libcamera's v4l2-compat library.
    public static func libcameraCompatPreloaded(_ ldPreload: String?) -> Bool {
        guard let ldPreload else { return false }
        return ldPreload.split(whereSeparator: { $0 == " " || $0 == ":" }).contains { $0.hasSuffix("v4l2-compat.so") }
    }

    public static var usesKernelCalls: Bool {
        libcameraCompatPreloaded(getenv("LD_PRELOAD").map { String(cString: $0) })
    }

    /// The calls for this process.
    public static func calls() -> any V4L2Calls {
        usesKernelCalls ? KernelV4L2Calls() : LibV4L2Calls()
    }
}

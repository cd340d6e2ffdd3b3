#if canImport(Glibc)
import Glibc
#endif
import Platform

/// Clocks and process figures for the benchmarks.
public enum BenchClock {
    /// CPU time of the calling thread, in milliseconds.
    public static func threadCPUMilliseconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) * 1e3 + Double(ts.tv_nsec) / 1e6
    }

    /// CLOCK_MONOTONIC in milliseconds.
    public static func wallMilliseconds() -> Double { Double(MonotonicInstant.now().nanoseconds) / 1e6 }

    /// Resident set size of this process in MiB (from /proc/self/statm), or nil.
    public static func residentMiB() -> Double? {
        guard let f = fopen("/proc/self/statm", "r") else { return nil }
        defer { fclose(f) }
        var size = 0, resident = 0
        guard withUnsafeMutablePointer(to: &size, { s in
            withUnsafeMutablePointer(to: &resident) { r in readTwo(f, s, r) }
        }) else { return nil }
        return Double(resident) * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    private static func readTwo(_ f: UnsafeMutablePointer<FILE>, _ a: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>) -> Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), f) != nil else { return false }
        let fields = cText(buffer).split(separator: " ")
        guard fields.count >= 2, let x = Int(fields[0]), let y = Int(fields[1]) else { return false }
        a.pointee = x
        b.pointee = y
        return true
    }

    /// Open file descriptors of this process (entries of /proc/self/fd, less the one the listing holds).
    public static func openDescriptors() -> Int {
        (Directory.count("/proc/self/fd") ?? 0) - 1
    }
}

/// Percentiles of a sample.
public struct Percentiles: Sendable {
    public let sorted: [Double]
    public init(_ values: [Double]) { sorted = values.sorted() }
    public func at(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[rank]
    }
    public var count: Int { sorted.count }
}

#if canImport(Glibc)
import Glibc
#endif
import Platform

/// Waiting on CLOCK_MONOTONIC the way the transmitter needs: sleep through most of a long wait, then
/// spin to the exact instant (a sleep of 100 us takes 94-160 us on a Pi; a spin does not).
enum WiegandClock {
    /// Spinning starts this long before the target; earlier than that the thread sleeps.
    static let spinMarginNanoseconds: UInt64 = 200_000

    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Busy-waits until `target` (a few microseconds: within a pulse).
    @inline(__always)
    static func spin(until target: UInt64) {
        while now() < target {}
    }

    /// Sleeps (clock_nanosleep, absolute) until `spinMargin` before `target`, then spins to it.
    static func wait(until target: UInt64) {
        let current = now()
        if target > current + spinMarginNanoseconds {
            sleepAbsolute(until: target - spinMarginNanoseconds)
        }
        spin(until: target)
    }

    /// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), resumed after a signal.
    static func sleepAbsolute(until target: UInt64) {
        sleepThread(until: MonotonicInstant(nanoseconds: target))
    }
}

/// Real-time scheduling and locked memory for the transmitter thread, when the service has the right
/// to them (the unit grants LimitRTPRIO= and LimitMEMLOCK=; root has them anyway). Without them the
/// daemon runs as it is: pulses may then stretch under load.
public enum WiegandRealtime {
    /// SCHED_FIFO priority asked for: above every normal thread, below the kernel's interrupt threads (50).
    public static let priority: Int32 = 10

    /// Puts the calling thread under SCHED_FIFO at `priority` (or the lower RLIMIT_RTPRIO when that is
    /// not 0). Returns the priority it got, or the errno (EPERM: no right).
    public static func promoteCurrentThread() -> Result<Int32, Errno> {
        var limit = rlimit()
        var wanted = priority
        if getrlimit(__rlimit_resource_t(__RLIMIT_RTPRIO.rawValue), &limit) == 0,
           limit.rlim_cur != rlim_t.max, limit.rlim_cur > 0, limit.rlim_cur < rlim_t(priority) {
            wanted = Int32(limit.rlim_cur)
        }
        var param = sched_param(sched_priority: wanted)
        let rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param)
        return rc == 0 ? .success(wanted) : .failure(Errno(rawValue: rc))
    }

    /// Locks the process's pages in RAM as they are touched (mlockall with MCL_ONFAULT, so thread stacks
    /// and buffers are not populated up front). MCL_FUTURE only when RLIMIT_MEMLOCK is unlimited: with
    /// a finite limit (RLIM_INFINITY is all ones), later allocations of the daemon could fail once the locked total reached it.
    /// Returns what was locked ("current and future pages") or the errno.
    public static func lockMemory() -> Result<String, Errno> {
        var limit = rlimit()
        let unlimited = getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0 && limit.rlim_cur == rlim_t.max
        let flags = unlimited ? MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT : MCL_CURRENT | MCL_ONFAULT
        if mlockall(Int32(flags)) == 0 {
            return .success(unlimited ? "current and future pages" : "current pages (LimitMEMLOCK is finite)")
        }
        let e = Errno.current
        if e == .invalidArgument, mlockall(Int32(unlimited ? MCL_CURRENT | MCL_FUTURE : MCL_CURRENT)) == 0 {
            return .success("all pages (this kernel has no MCL_ONFAULT)")   // kernels before 4.4
        }
        return .failure(e)
    }

    /// The allocator asked to keep freed memory in the process (glibc's mallopt): no trimming of the heap
    /// top below 1 GiB free, and blocks up to 32 MiB (the most it accepts) from the heap, not from mmap.
    /// Otherwise each large buffer the decoder frees (a frame's copy, a crop, zxing's bit matrices) is
    /// handed back with munmap or madvise, and each of those interrupts every CPU that runs a thread of
    /// the process, the transmitter's in the middle of a pulse included, to flush its TLB. The cost: the
    /// daemon's memory does not shrink back after a peak. Returns the settings that took.
    public static func keepFreedMemory() -> [String] {
        let took = Allocator.keepFreedMemory()
        return (took.trim ? ["no heap trimming"] : []) + (took.mmap ? ["blocks up to 32 MiB from the heap"] : [])
    }
}

import Core
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// Runs `scangate run ...` as a child process, as users run it, and samples its resident memory and
/// open descriptors from /proc while it runs. Counts the event lines it prints.
public struct DaemonProcess {
    public struct Sample: Sendable {
        public var seconds: Double
        public var residentMiB: Double
        public var descriptors: Int
    }

    public struct Result: Sendable {
        public var samples: [Sample]
        public var eventLines: Int
        /// The stdout lines, when asked for.
        public var lines: [String]
        public var exitStatus: Int32
        public var seconds: Double
    }

    /// Two windows of steady running: three samples at 20% of the run (after start-up and warm-up) and
    /// three at 90% (before shutdown begins, which starts threads and closes devices).
    public static func steadyWindows(_ samples: [Sample]) -> (early: ArraySlice<Sample>, late: ArraySlice<Sample>) {
        let n = samples.count
        let e = n / 5, l = max(e + 1, n * 9 / 10 - 3)
        return (samples[e..<min(n, e + 3)], samples[l..<min(n, l + 3)])
    }

    /// The path of the running executable (for spawning `scangate` itself).
    public static func selfExecutable() throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw SystemError("readlink", "/proc/self/exe", .current) }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Spawns `executable arguments`, samples it every `intervalMs`, and waits for it to exit.
    public static func run(_ executable: String, _ arguments: [String], intervalMs: Double = 250,
                           keepLines: Bool = false, progress: (Double) -> Void = { _ in }) throws -> Result {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError("pipe", "daemon stdout", .current) }
        let start = MonotonicInstant.now()
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(executable, arguments, stdout: .descriptor(fds[1]), stderr: .devNull, closeInChild: [fds[0]])
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        close(fds[1])
        let reader = fds[0]
        // Count event lines on a thread so the child never blocks on a full pipe.
        let counter = LineCounter()
        let thread = try PosixThread(name: "bench-stdout") {
            var buffer = [UInt8](repeating: 0, count: 65536)
            var partial: [UInt8] = []
            while true {
                let n = (try? buffer.withUnsafeMutableBytes { FileDescriptor(rawValue: reader).read(into: $0) }.get()) ?? 0
                if n <= 0 { break }
                for b in buffer[0..<n] {
                    if b == 0x0A {
                        counter.add(line: keepLines ? String(decoding: partial, as: UTF8.self) : nil)
                        partial.removeAll(keepingCapacity: true)
                    } else if keepLines {
                        partial.append(b)
                    }
                }
            }
        }
        var samples: [Sample] = []
        var exit: Int32 = -1
        while true {
            let state = child.poll()
            if case .exited(let status) = state { exit = status; break }
            if state == .gone { break }
            let t = MonotonicInstant.now().milliseconds(since: start) / 1000
            if let rss = residentMiB(pid: child.pid) {
                samples.append(Sample(seconds: t, residentMiB: rss, descriptors: descriptors(pid: child.pid)))
            }
            progress(t)
            sleepThread(milliseconds: intervalMs)
        }
        thread.join()
        close(reader)
        return Result(samples: samples, eventLines: counter.value, lines: counter.lines, exitStatus: exit,
                      seconds: MonotonicInstant.now().milliseconds(since: start) / 1000)
    }

    /// VmRSS from /proc/PID/status, in MiB.
    static func residentMiB(pid: pid_t) -> Double? {
        guard let f = fopen("/proc/\(pid)/status", "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = cText(line)
            if text.hasPrefix("VmRSS:") {
                let kb = text.split(separator: " ").compactMap { Double($0) }.first ?? 0
                return kb / 1024
            }
        }
        return nil
    }

    static func descriptors(pid: pid_t) -> Int { Directory.count("/proc/\(pid)/fd") ?? -1 }
}

final class LineCounter: Sendable {
    private let state = PosixMutex<(Int, [String])>((0, []))
    func add(line: String?) {
        state.withLock { s in
            s.0 += 1
            if let line { s.1.append(line) }
        }
    }
    var value: Int { state.withLock { $0.0 } }
    var lines: [String] { state.withLock { $0.1 } }
}

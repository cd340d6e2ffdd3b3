#if canImport(Glibc)
import Glibc
#endif
import CGpiod
import Platform

/// The real gpiod calls over libgpiod 1.6 (v1 API). Stateless: every handle is a libgpiod pointer.
public struct SystemGpiodCalls: GpiodCalls {
    public init() {}

    private func chipPointer(_ chip: GpiodChipHandle) -> OpaquePointer? { OpaquePointer(bitPattern: chip.address) }
    private func linePointer(_ line: GpiodLineHandle) -> OpaquePointer? { OpaquePointer(bitPattern: line.address) }

    private func wrap(_ pointer: OpaquePointer?) -> Result<GpiodChipHandle, Errno> {
        guard let pointer else {
            let e = Errno.current
            return .failure(e.rawValue == 0 ? .noSuchFile : e)
        }
        return .success(GpiodChipHandle(address: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer)))))
    }

    private func wrapLine(_ pointer: OpaquePointer?) -> Result<GpiodLineHandle, Errno> {
        guard let pointer else {
            let e = Errno.current
            return .failure(e.rawValue == 0 ? .invalidArgument : e)
        }
        return .success(GpiodLineHandle(address: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer)))))
    }

    public func chipPaths() -> [String] {
        let found = ((try? Directory.entries("/dev")) ?? []).compactMap { name -> (Int, String)? in
            guard name.hasPrefix("gpiochip"), let n = Int(name.dropFirst("gpiochip".count)) else { return nil }
            return (n, "/dev/" + name)
        }
        return found.sorted { $0.0 < $1.0 }.map(\.1)
    }

    public func openChip(path: String) -> Result<GpiodChipHandle, Errno> {
        errno = 0
        return wrap(gpiod_chip_open(path))
    }

    public func openChip(name: String) -> Result<GpiodChipHandle, Errno> {
        errno = 0
        return wrap(gpiod_chip_open_by_name(name))
    }

    public func openChip(label: String) -> Result<GpiodChipHandle, Errno> {
        errno = 0
        return wrap(gpiod_chip_open_by_label(label))
    }

    public func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> {
        errno = 0
        return wrap(gpiod_chip_open_lookup(lookup))
    }

    public func closeChip(_ chip: GpiodChipHandle) {
        guard let p = chipPointer(chip) else { return }
        gpiod_chip_close(p)
    }

    public func chipName(_ chip: GpiodChipHandle) -> String {
        guard let p = chipPointer(chip), let s = gpiod_chip_name(p) else { return "" }
        return String(cString: s)
    }

    public func chipLabel(_ chip: GpiodChipHandle) -> String {
        guard let p = chipPointer(chip), let s = gpiod_chip_label(p) else { return "" }
        return String(cString: s)
    }

    public func numLines(_ chip: GpiodChipHandle) -> Int {
        guard let p = chipPointer(chip) else { return 0 }
        return Int(gpiod_chip_num_lines(p))
    }

    public func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        guard let p = chipPointer(chip), let o = UInt32(exactly: offset) else { return .failure(.invalidArgument) }
        errno = 0
        return wrapLine(gpiod_chip_get_line(p, o))
    }

    public func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        guard let p = chipPointer(chip) else { return .failure(.invalidArgument) }
        errno = 0
        guard let line = gpiod_chip_find_line(p, name) else {
            let e = Errno.current
            // libgpiod sets ENOENT for "no such name"; anything else is a real failure.
            return .failure(e.rawValue == 0 ? .noSuchFile : e)
        }
        return wrapLine(line)
    }

    public func lineName(_ line: GpiodLineHandle) -> String? {
        guard let p = linePointer(line), let s = gpiod_line_name(p) else { return nil }
        let name = String(cString: s)
        return name.isEmpty ? nil : name
    }

    public func lineConsumer(_ line: GpiodLineHandle) -> String? {
        guard let p = linePointer(line), let s = gpiod_line_consumer(p) else { return nil }
        let name = String(cString: s)
        return name.isEmpty ? nil : name
    }

}

import CShim
import CZbar
import Core

/// Owns one zbar image scanner (zbar_image_scanner_t). Not thread-safe: used from the decode queue only.
final class ZbarScanner {
    private let scanner: OpaquePointer

    struct ConfigError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    init() throws {
        // Before zbar can print: its assertion reports go to the logger, not straight to stderr.
        LibraryStderr.install()
        guard let s = zbar_image_scanner_create() else { throw ConfigError(message: "zbar_image_scanner_create failed") }
        scanner = s
        // The daemon debounces itself; zbar's own result cache would hide a code that returns.
        zbar_image_scanner_enable_cache(scanner, 0)
    }

    deinit { zbar_image_scanner_destroy(scanner) }

    func set(_ symbology: zbar_symbol_type_t, _ config: zbar_config_t, _ value: Int32) throws {
        if zbar_image_scanner_set_config(scanner, symbology, config, value) != 0 {
            throw ConfigError(message: "zbar rejected config \(config.rawValue)=\(value) for symbology \(symbology.rawValue)")
        }
    }

    /// Scans one 8-bit gray image; calls `each` with (type, bytes, bounding box) for each symbol found.
    func scan(width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>,
              _ each: (zbar_symbol_type_t, [UInt8], Rect) -> Void) -> Int {
        guard let image = zbar_image_create(), let base = luma.baseAddress else { return 0 }
        defer { zbar_image_destroy(image) }
        zbar_image_set_format(image, UInt(shim_fourcc(0x59, 0x38, 0x30, 0x30)))  // "Y800"
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        // No cleanup handler: zbar only borrows the caller's bytes for the duration of the scan.
        zbar_image_set_data(image, base, UInt(luma.count), nil)
        let found = zbar_scan_image(scanner, image)
        guard found > 0 else { return Int(max(found, 0)) }
        var symbol = zbar_image_first_symbol(image)
        while let s = symbol {
            let length = Int(zbar_symbol_get_data_length(s))
            var bytes = [UInt8](repeating: 0, count: length)
            if length > 0, let data = zbar_symbol_get_data(s) {
                data.withMemoryRebound(to: UInt8.self, capacity: length) { p in
                    for i in 0..<length { bytes[i] = p[i] }
                }
            }
            each(zbar_symbol_get_type(s), bytes, ZbarScanner.bounds(of: s))
            symbol = zbar_symbol_next(s)
        }
        return Int(found)
    }

    private static func bounds(of symbol: OpaquePointer) -> Rect {
        let n = zbar_symbol_get_loc_size(symbol)
        guard n > 0 else { return Rect(x: 0, y: 0, w: 0, h: 0) }
        var minX = Int.max, minY = Int.max, maxX = Int.min, maxY = Int.min
        for i in 0..<n {
            let x = Int(zbar_symbol_get_loc_x(symbol, i)), y = Int(zbar_symbol_get_loc_y(symbol, i))
            minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
        }
        return Rect(x: minX, y: minY, w: maxX - minX + 1, h: maxY - minY + 1)
    }
}

import Core
import Decoding
import Settings
import Simulator
import StillImages

/// The flattened-label pass of decode-image on arbitrary small images.
enum DecodingFuzz {
    /// Input: width byte, height byte (16...64 each), then the pixels (repeated to fill the image).
    /// A flattened label has a sane size and its pixels; its corners and centre map back inside the
    /// photo, since the patch only blends points of the label's own outline.
    @Sendable static func labelUnwarp(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let width = 16 + Int(input.byte()) % 49, height = 16 + Int(input.byte()) % 49
        let rest = input.rest()
        guard !rest.isEmpty else { return }
        let luma = (0..<(width * height)).map { rest[$0 % rest.count] }
        guard let label = LabelUnwarp.flatten(width: width, height: height, luma: luma) else { return }
        require(label.width >= 16 && label.height >= 16, "flattened to \(label.width)x\(label.height)")
        require(max(label.width, label.height) <= LabelUnwarp.maxSide + 1, "flattened beyond the size cap")
        require(label.luma.count == label.width * label.height, "pixel count does not match the size")
        for r in [Rect(x: 0, y: 0, w: label.width - 1, h: label.height - 1),
                  Rect(x: label.width / 3, y: label.height / 3, w: 1, h: 1)] {
            let back = label.mapBack(r)
            require(back.x >= 0 && back.y >= 0 && back.x + back.w <= width && back.y + back.h <= height,
                    "\(r) mapped back to \(back), outside the \(width)x\(height) photo")
        }
    }

    /// zxing-cpp through the live decoder (the CZXingShim boundary). Input: width byte, height byte
    /// (8...135 each), a byte choosing the formats and invert-retry, then the pixels (repeated to fill the
    /// image). Every symbol has a symbology that was asked for, four corners near the frame (zxing may
    /// extrapolate past its edge: bounded here by four times its size) whose box is the bounds; no read
    /// fails.
    @Sendable static func zxing(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let width = 8 + Int(input.byte()) % 128, height = 8 + Int(input.byte()) % 128
        let choice = input.byte()
        let rest = input.rest()
        guard !rest.isEmpty else { return }
        var settings = DecoderSettings()
        settings.symbologies = choice & 1 == 0 ? Set(Symbology.allCases) : [.qr, .microqr, .datamatrix, .aztec, .pdf417]
        settings.invertRetry = choice & 2 == 0
        let luma = (0..<(width * height)).map { rest[$0 % rest.count] }
        // A zxing-cpp assertion the shim recovers from abandons that read's C++ frames, whose allocations
        // are not freed (ZXingDecoder.assertions; once per decoder, then Micro QR is off). So the frame is
        // first read with leak checking off; one that makes zxing assert is judged on that read, any
        // other is read again on a fresh decoder with leak checking on.
        let probe = ZXingDecoder(settings: settings)
        lsanDisable()
        let probed = probe.decode(width: width, height: height, luma: luma)
        lsanEnable()
        let decoder = probe.assertions > 0 ? probe : ZXingDecoder(settings: settings)
        let symbols = probe.assertions > 0 ? probed : decoder.decode(width: width, height: height, luma: luma)
        for symbol in symbols {
            require(symbol.corners.count == 4, "\(symbol.corners.count) corners")
            require(symbol.bounds == Rect(enclosing: symbol.corners), "bounds \(symbol.bounds) are not the corners' box")
            require(symbol.corners.allSatisfy { abs($0.x) <= 4 * width && abs($0.y) <= 4 * height },
                    "corners \(symbol.corners) far outside the \(width)x\(height) frame")
            require(settings.symbologies.contains(symbol.symbology) || symbol.symbology == .ean13 || symbol.symbology == .upca,
                    "\(symbol.symbology) was not asked for")
        }
        require(decoder.failedReads == 0, "zxing failed \(decoder.failedReads) reads")
        // A recovered assertion is one in the Micro QR detector: nothing else is known to assert.
        require(decoder.assertions == 0 || decoder.disabledFormats != 0, "zxing-cpp asserted outside Micro QR detection")
    }

    /// zxing-cpp's writer (make-code, the simulator). Input: a byte choosing the symbology, then the
    /// payload (at most 600 bytes). Encoding returns modules of a sane size or a one-line SymbolError.
    @Sendable static func zxingWriter(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let drawn: [Symbology] = [.datamatrix, .aztec, .pdf417, .code93, .i25, .codabar]
        let symbology = drawn[Int(input.byte()) % drawn.count]
        let payload = Array(input.rest().prefix(600))
        do {
            let bitmap = try ZXingWriter.encode(symbology, payload: payload)
            require(bitmap.width > 0 && bitmap.height > 0 && bitmap.width <= 20_000 && bitmap.height <= 2_000,
                    "\(symbology) drawn \(bitmap.width)x\(bitmap.height)")
        } catch {
            require(!error.description.contains("\n"), "a refusal of more than one line: \(error)")
        }
    }
}

/// LeakSanitizer's switch (the fuzz build links it): allocations made while it is off are never reported.
@_silgen_name("__lsan_disable") private func lsanDisable()
@_silgen_name("__lsan_enable") private func lsanEnable()

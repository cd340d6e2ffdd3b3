#include "CZXingShim.h"

// text() as UTF-8 std::string (1.4 otherwise returns std::wstring and hides utf8()).
#define ZX_USE_UTF8 1
#include <ZXing/BitMatrix.h>
#include <ZXing/MultiFormatWriter.h>
#include <ZXing/ReadBarcode.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <stdexcept>
#include <exception>
#include <string>

namespace {

/// A malloc'd copy of `n` bytes (one more, so an empty payload is not a NULL pointer).
uint8_t *copyBytes(const void *bytes, size_t n) {
    auto *p = static_cast<uint8_t *>(std::malloc(n + 1));
    if (p && n > 0) std::memcpy(p, bytes, n);
    return p;
}

/// The first ECI designator in zxing's ECI-protocol content (`]Q2\000026...`): a backslash and six
/// digits after the three-character symbology identifier; a literal backslash is written twice.
int firstECI(const ZXing::ByteArray &content) {
    size_t i = content.size() >= 3 && content[0] == ']' ? 3 : 0;
    while (i < content.size()) {
        if (content[i] != '\\') { ++i; continue; }
        if (i + 1 < content.size() && content[i + 1] == '\\') { i += 2; continue; }
        if (i + 7 > content.size()) return -1;
        int eci = 0;
        for (size_t k = i + 1; k < i + 7; ++k) {
            if (content[k] < '0' || content[k] > '9') return -1;
            eci = eci * 10 + (content[k] - '0');
        }
        return eci;
    }
    return -1;
}

void setMessage(char *message, size_t size, const char *text) {
    if (message && size > 0) std::snprintf(message, size, "%s", text);
}

// Debian 12's zxing-cpp 1.4.0 is built with assertions on, and one of them fires on some camera frames:
// `intersect` in RegressionLine.h, reached from Micro QR detection (ConcentricFinder's
// FitQadrilateralToPoints; upstream checks the lines first since commit 621eb25d, after 1.4.0). An
// assertion aborts the process, so a frame could stop the daemon. While zxshim_read is inside zxing on
// this thread, the assertion handler below jumps back to it instead: that read is abandoned and returns
// ZXSHIM_ASSERTED (its C++ frames are skipped, so what they allocated is not freed; the Swift side turns
// Micro QR off after the first one, which bounds that). Outside a read, the C library's handler runs.
// Per thread, for the thread inside zxing: not shared state.
thread_local std::jmp_buf *readInProgress = nullptr;
thread_local char lastAssertion[512];

using AssertFail = void (*)(const char *, const char *, unsigned int, const char *);

} // namespace

extern "C" void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function) noexcept {
    if (std::jmp_buf *back = readInProgress) {
        readInProgress = nullptr;
        std::snprintf(lastAssertion, sizeof lastAssertion, "%s:%u: %s: assertion `%s' failed",
                      file ? file : "?", line, function ? function : "?", assertion ? assertion : "?");
        std::longjmp(*back, 1);
    }
    if (auto real = reinterpret_cast<AssertFail>(dlsym(RTLD_NEXT, "__assert_fail"))) real(assertion, file, line, function);
    std::abort();
}

extern "C" const char *zxshim_last_assertion(void) { return lastAssertion; }

namespace {
int readUnguarded(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags, zxshim_symbol **out);
}

extern "C" int zxshim_read(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags,
                           zxshim_symbol **out) {
    if (!out) return -1;
    *out = nullptr;
    if (!luma || width <= 0 || height <= 0) return -1;
    std::jmp_buf back;
    if (setjmp(back) != 0) {
        // An assertion inside zxing: nothing of this read is returned.
        *out = nullptr;
        return ZXSHIM_ASSERTED;
    }
    readInProgress = &back;
    int n = readUnguarded(luma, width, height, formats, flags, out);
    readInProgress = nullptr;
    return n;
}

namespace {

int readUnguarded(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags, zxshim_symbol **out) {
    zxshim_symbol *symbols = nullptr;
    int n = 0;
    try {
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats)));
        hints.setTryHarder((flags & ZXSHIM_TRY_HARDER) != 0);
        hints.setTryRotate((flags & ZXSHIM_TRY_ROTATE) != 0);
        hints.setTryDownscale((flags & ZXSHIM_TRY_DOWNSCALE) != 0);
        hints.setTryCode39ExtendedMode((flags & ZXSHIM_CODE39_EXTENDED) != 0);
        hints.setIsPure((flags & ZXSHIM_PURE) != 0);
        if (flags & ZXSHIM_BINARIZER_GLOBAL) hints.setBinarizer(ZXing::Binarizer::GlobalHistogram);
        if (flags & ZXSHIM_BINARIZER_FIXED) hints.setBinarizer(ZXing::Binarizer::FixedThreshold);
        ZXing::ImageView view(luma, width, height, ZXing::ImageFormat::Lum);
        ZXing::Results results;
        try {
            results = ZXing::ReadBarcodes(view, hints);
        } catch (const std::out_of_range &) {
            // zxing-cpp 1.4's Aztec detector can index past a small bit matrix (vector::at throws; found
            // by the zxing fuzz target on 9x8 images). Read again without Aztec, so that one detector's
            // fault does not hide the other formats in the frame.
            const uint32_t aztec = static_cast<uint32_t>(ZXing::BarcodeFormat::Aztec);
            if (!(formats & aztec) || !(formats & ~aztec)) throw;
            hints.setFormats(ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats & ~aztec)));
            results = ZXing::ReadBarcodes(view, hints);
        }
        if (results.empty()) return 0;
        symbols = static_cast<zxshim_symbol *>(std::calloc(results.size(), sizeof(zxshim_symbol)));
        if (!symbols) return -1;
        for (const auto &r : results) {
            if (!r.isValid()) continue;
            auto &s = symbols[n];
            const auto &bytes = r.bytes();
            s.format = static_cast<uint32_t>(r.format());
            s.length = bytes.size();
            s.data = copyBytes(bytes.data(), bytes.size());
            if (!s.data) { zxshim_free(symbols, n); return -1; }
            ++n;
            if (flags & ZXSHIM_TEXT) {
                std::string text = r.text();
                s.text_length = text.size();
                s.text = copyBytes(text.data(), text.size());
                if (!s.text) { zxshim_free(symbols, n); return -1; }
            }
            const auto &p = r.position();
            for (int i = 0; i < 4; ++i) { s.corners[2 * i] = p[i].x; s.corners[2 * i + 1] = p[i].y; }
            s.eci = r.hasECI() ? firstECI(r.bytesECI()) : -1;
            s.content_type = static_cast<int>(r.contentType());
        }
    } catch (...) {
        zxshim_free(symbols, n);
        return -1;
    }
    if (n == 0) { std::free(symbols); return 0; }
    *out = symbols;
    return n;
}

} // namespace

extern "C" void zxshim_free(zxshim_symbol *symbols, int count) {
    if (!symbols) return;
    for (int i = 0; i < count; ++i) {
        std::free(symbols[i].data);
        std::free(symbols[i].text);
    }
    std::free(symbols);
}

extern "C" uint32_t zxshim_format(const char *name) {
    if (!name) return 0;
    try {
        return static_cast<uint32_t>(ZXing::BarcodeFormatFromString(name));
    } catch (...) {
        return 0;
    }
}

extern "C" int zxshim_write(uint32_t format, const uint8_t *payload, size_t length, int ecc, zxshim_modules *out,
                            char *message, size_t message_size) {
    if (!out || (!payload && length > 0)) { setMessage(message, message_size, "no payload"); return -1; }
    out->width = 0; out->height = 0; out->dark = nullptr;
    try {
        std::wstring contents;
        contents.reserve(length);
        for (size_t i = 0; i < length; ++i) contents.push_back(static_cast<wchar_t>(payload[i]));
        ZXing::MultiFormatWriter writer(static_cast<ZXing::BarcodeFormat>(format));
        writer.setMargin(0);
        writer.setEncoding(ZXing::CharacterSet::ISO8859_1);
        if (ecc >= 0) writer.setEccLevel(ecc);
        auto matrix = writer.encode(contents, 0, 0);
        int w = matrix.width(), h = matrix.height();
        if (w <= 0 || h <= 0) { setMessage(message, message_size, "zxing wrote an empty symbol"); return -1; }
        auto *dark = static_cast<uint8_t *>(std::malloc(static_cast<size_t>(w) * h));
        if (!dark) { setMessage(message, message_size, "out of memory"); return -1; }
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) dark[static_cast<size_t>(y) * w + x] = matrix.get(x, y) ? 1 : 0;
        out->width = w; out->height = h; out->dark = dark;
        return 0;
    } catch (const std::exception &e) {
        setMessage(message, message_size, e.what());
        return -1;
    } catch (...) {
        setMessage(message, message_size, "zxing threw");
        return -1;
    }
}

extern "C" void zxshim_free_modules(zxshim_modules *modules) {
    if (!modules) return;
    std::free(modules->dark);
    modules->dark = nullptr;
}

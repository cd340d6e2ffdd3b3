#include "CZXingShim.h"

// text() as UTF-8 std::string (1.4 otherwise returns std::wstring and hides utf8()).
#define ZX_USE_UTF8 1
#include <ZXing/ReadBarcode.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

extern "C" int zxshim_read(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags,
                           zxshim_symbol **out) {
    *out = nullptr;
    if (!luma || width <= 0 || height <= 0) return -1;
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
        auto results = ZXing::ReadBarcodes(view, hints);
        if (results.empty()) return 0;
        auto *symbols = static_cast<zxshim_symbol *>(std::calloc(results.size(), sizeof(zxshim_symbol)));
        if (!symbols) return -1;
        int n = 0;
        for (const auto &r : results) {
            if (!r.isValid()) continue;
            std::string text;
            if (flags & ZXSHIM_RAW_BYTES) {
                const auto &b = r.bytes();
                text.assign(b.begin(), b.end());
            } else {
                text = r.text();
            }
            auto &s = symbols[n];
            s.format = static_cast<uint32_t>(r.format());
            s.length = text.size();
            s.data = static_cast<uint8_t *>(std::malloc(text.size() + 1));
            if (!s.data) { zxshim_free(symbols, n); return -1; }
            std::memcpy(s.data, text.data(), text.size());
            const auto &p = r.position();
            int minX = INT_MAX, minY = INT_MAX, maxX = INT_MIN, maxY = INT_MIN;
            for (int i = 0; i < 4; ++i) {
                minX = std::min(minX, p[i].x); maxX = std::max(maxX, p[i].x);
                minY = std::min(minY, p[i].y); maxY = std::max(maxY, p[i].y);
            }
            s.x = minX; s.y = minY; s.w = maxX - minX + 1; s.h = maxY - minY + 1;
            ++n;
        }
        if (n == 0) { std::free(symbols); return 0; }
        *out = symbols;
        return n;
    } catch (...) {
        return -1;
    }
}

extern "C" void zxshim_free(zxshim_symbol *symbols, int count) {
    if (!symbols) return;
    for (int i = 0; i < count; ++i) std::free(symbols[i].data);
    std::free(symbols);
}

// A C face for zxing-cpp (Debian libzxing-dev, C++), so Swift can call it without C++ interop.
#ifndef SCANGATE_CZXINGSHIM_H
#define SCANGATE_CZXINGSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One symbol found. `data` is malloc'd; free the array with zxshim_free.
typedef struct zxshim_symbol {
    /// A ZXing::BarcodeFormat bit (QRCode = 1 << 13, EAN13 = 1 << 9, ...).
    uint32_t format;
    uint8_t *data;
    size_t length;
    /// Bounding box of the symbol's corner points, in image pixels.
    int x, y, w, h;
} zxshim_symbol;

enum {
    /// Payload as the raw bytes of the symbol (default: text as UTF-8, by ECI or guessed charset).
    ZXSHIM_RAW_BYTES = 1 << 0,
    /// Slower, more thorough search (zxing's tryHarder).
    ZXSHIM_TRY_HARDER = 1 << 1,
    /// Also try the image rotated by 90°.
    ZXSHIM_TRY_ROTATE = 1 << 2,
    /// Also try downscaled copies of large images.
    ZXSHIM_TRY_DOWNSCALE = 1 << 3,
    /// Decode Code 39 full-ASCII pairs.
    ZXSHIM_CODE39_EXTENDED = 1 << 4,
    /// The image is one unrotated, undistorted code (a rendered image, not a photo).
    ZXSHIM_PURE = 1 << 5,
    /// Binarize with a global histogram threshold (default: local average).
    ZXSHIM_BINARIZER_GLOBAL = 1 << 6,
    /// Binarize at a fixed threshold of 127 (default: local average).
    ZXSHIM_BINARIZER_FIXED = 1 << 7,
};

/// Reads every symbol of the `formats` (ZXing::BarcodeFormat bits) in an 8-bit gray image
/// (stride == width). Returns the number of symbols (>= 0) with *out set to a malloc'd array (NULL
/// when 0), or -1 when zxing threw or memory ran out.
int zxshim_read(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags,
                zxshim_symbol **out);

/// Frees what zxshim_read returned.
void zxshim_free(zxshim_symbol *symbols, int count);

#ifdef __cplusplus
}
#endif

#endif

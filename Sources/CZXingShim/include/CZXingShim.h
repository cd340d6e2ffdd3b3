// A C face for zxing-cpp (Debian libzxing-dev 1.4, C++), so Swift can call it without C++ interop.
// Every C++ exception is caught here: no call below lets one escape.
#ifndef SCANGATE_CZXINGSHIM_H
#define SCANGATE_CZXINGSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One symbol found. `data` and `text` are malloc'd; free the array with zxshim_free.
typedef struct zxshim_symbol {
    /// A ZXing::BarcodeFormat bit (QRCode = 1 << 13, EAN13 = 1 << 9, ...).
    uint32_t format;
    /// The payload's raw bytes, without any charset conversion (zxing's bytes()).
    uint8_t *data;
    size_t length;
    /// With ZXSHIM_TEXT: the payload as UTF-8 (by ECI or guessed charset); NULL otherwise.
    uint8_t *text;
    size_t text_length;
    /// The symbol's four corners in image pixels (zxing's position): x0, y0, x1, y1, x2, y2, x3, y3,
    /// top-left, top-right, bottom-right, bottom-left as the symbol reads.
    int corners[8];
    /// The first ECI designator in the symbol (3 = ISO-8859-1, 26 = UTF-8, ...), or -1 when it has none.
    int eci;
    /// ZXing::ContentType: 0 Text, 1 Binary, 2 Mixed, 3 GS1, 4 ISO15434, 5 UnknownECI.
    int content_type;
} zxshim_symbol;

enum {
    /// Also return the payload as UTF-8 text (zxing's text()).
    ZXSHIM_TEXT = 1 << 0,
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

/// zxshim_read's return when zxing-cpp hit one of its assertions (Debian builds it with them on):
/// the read was abandoned instead of aborting the process; zxshim_last_assertion() says which.
#define ZXSHIM_ASSERTED (-2)

/// Reads every symbol of the `formats` (ZXing::BarcodeFormat bits) in an 8-bit gray image
/// (stride == width). Returns the number of symbols (>= 0) with *out set to a malloc'd array (NULL
/// when 0), -1 when zxing threw or memory ran out, or ZXSHIM_ASSERTED.
int zxshim_read(const uint8_t *luma, int width, int height, uint32_t formats, uint32_t flags,
                zxshim_symbol **out);

/// The last assertion zxshim_read recovered from on this thread ("file:line: function: assertion `...'
/// failed"); empty when none.
const char *zxshim_last_assertion(void);

/// Frees what zxshim_read returned.
void zxshim_free(zxshim_symbol *symbols, int count);

/// The ZXing::BarcodeFormat bit zxing-cpp gives `name` ("QRCode", "DataMatrix", "EAN13"; '-' and '_'
/// optional, case ignored), or 0 when it names no single format.
uint32_t zxshim_format(const char *name);

/// A symbol's modules from zxing's writer: `dark` is width * height bytes (1 dark, 0 light), row-major,
/// malloc'd; free it with zxshim_free_modules.
typedef struct zxshim_modules {
    int width, height;
    uint8_t *dark;
} zxshim_modules;

/// Encodes `length` payload bytes as one symbol of `format` (one ZXing::BarcodeFormat bit) with
/// zxing's MultiFormatWriter, no margin. Each byte is one character (ISO-8859-1), so binary payloads
/// survive in DataMatrix, Aztec and PDF417. `ecc` is the writer's level (-1: its default). Returns 0,
/// or -1 with a message (NUL-terminated, at most `message_size` bytes) when zxing refused the payload.
int zxshim_write(uint32_t format, const uint8_t *payload, size_t length, int ecc, zxshim_modules *out,
                 char *message, size_t message_size);

/// Frees what zxshim_write returned.
void zxshim_free_modules(zxshim_modules *modules);

#ifdef __cplusplus
}
#endif

#endif

// zlib (Debian zlib1g-dev): inflate for the Token Status Lists' compressed bit arrays, bounded by the
// caller. Never hand-written inflate.
#include <zlib.h>

// libcbor 0.8 (Debian libcbor-dev): CBOR for COSE_Sign1 / CWT passes.
#include <cbor.h>

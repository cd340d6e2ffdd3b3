// OpenSSL's libcrypto (Debian libssl-dev): AES for the OSDP secure channel, Ed25519 and ECDSA P-256 for
// signed passes, the system's random source. Never hand-written crypto.
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>

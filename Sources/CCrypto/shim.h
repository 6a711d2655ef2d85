// OpenSSL's libcrypto, for SHA-256 only (libcurl already links it).
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/evp.h>
#endif

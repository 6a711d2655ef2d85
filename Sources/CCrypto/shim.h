// OpenSSL's libcrypto: SHA-256, and the text of a certificate verify result (libcurl already links it).
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#endif

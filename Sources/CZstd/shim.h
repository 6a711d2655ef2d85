// Debian's libzstd (libzstd-dev): the chunk store's compression.
#ifndef CZSTD_SHIM_H
#define CZSTD_SHIM_H
#include <zstd.h>
#endif

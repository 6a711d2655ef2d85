/*
 * BATestHog: a misbehaving extension for the tests. downloads_for_request allocates and touches
 * 1 GiB in 1 MiB chunks (abort() if malloc fails): under the host's memory cap it must be
 * reported as having exceeded its memory.
 */
#include "ba_extension.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)1 << 20)
#define CHUNK_COUNT 1024 /* 1 GiB */

/* Keeps the compiler from eliding the allocation or the memset of memory never read again. */
static void keep(void *pointer)
{
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" : : "r"(pointer) : "memory");
#else
    volatile unsigned char *byte = pointer;
    (void)*byte;
#endif
}

static void hog_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    for (int i = 0; i < CHUNK_COUNT; i++) {
        void *chunk = malloc(CHUNK_BYTES);
        if (chunk == NULL) abort();
        memset(chunk, 0xA5, CHUNK_BYTES); /* touch every page so it is really resident */
        keep(chunk);
        /* Never freed: the point is to hold it all. */
    }
    if (host != NULL && host->log != NULL) host->log(BA_LOG_INFO, BA_STR("BATestHog: allocated 1 GiB"));
}

static const ba_extension_desc hog_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestHog",
    .name_length = sizeof("BATestHog") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = hog_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &hog_descriptor;
}

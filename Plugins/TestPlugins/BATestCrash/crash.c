/*
 * BATestCrash: a misbehaving extension for the tests. downloads_for_request writes through a
 * NULL pointer: the host must report a crash with SIGSEGV.
 */
#include "ba_extension.h"

static void crash_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (host != NULL && host->log != NULL) host->log(BA_LOG_INFO, BA_STR("BATestCrash: writing through NULL"));
    /* A volatile pointer: the compiler cannot see it is NULL, so the store stays a real store. */
    int *volatile target = NULL;
    *target = 42;
}

static const ba_extension_desc crash_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestCrash",
    .name_length = sizeof("BATestCrash") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = crash_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &crash_descriptor;
}

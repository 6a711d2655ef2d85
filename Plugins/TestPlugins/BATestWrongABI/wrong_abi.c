/*
 * BATestWrongABI: an extension for the tests whose descriptor claims ABI 99.0: the host must
 * refuse it as an ABI mismatch without calling anything.
 */
#include "ba_extension.h"

static void wrong_abi_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)host;
    (void)request;
    /* Valid, and returns nothing; the host must never get here. */
}

static const ba_extension_desc wrong_abi_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = 99,
    .abi_minor = 0,
    .name = "BATestWrongABI",
    .name_length = sizeof("BATestWrongABI") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = wrong_abi_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &wrong_abi_descriptor;
}

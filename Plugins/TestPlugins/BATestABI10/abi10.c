/*
 * BATestABI10: an extension built against C ABI 1.0, before should_download was appended to the
 * descriptor: its descriptor is 88 bytes with abi_minor 0. A 1.1 host must load it, call its
 * 1.0 entry points, and treat it as wanting every asset pack, without reading past its end.
 *
 * The 1.0 layout is spelled out here (ba_extension.h now declares 1.1). Right after the
 * descriptor sits a pointer to a function that crashes: a host that read a 96-byte descriptor
 * would take it for should_download and call it.
 */
#include "ba_extension.h"

#include <stddef.h>

typedef struct {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    const char *name;
    size_t name_length;
    const char *version;
    size_t version_length;
    void *context;
    ba_downloads_for_request_fn downloads_for_request;
    ba_download_finished_fn download_finished;
    ba_download_failed_fn download_failed;
    ba_download_challenge_fn download_received_challenge;
    ba_extension_will_terminate_fn extension_will_terminate;
} ba_extension_desc_1_0;

_Static_assert(sizeof(ba_extension_desc_1_0) == 88, "the 1.0 descriptor is 88 bytes");
_Static_assert(offsetof(ba_extension_desc, should_download) == sizeof(ba_extension_desc_1_0),
               "1.1 appends should_download right after the 1.0 descriptor");

static void abi10_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    host->log(BA_LOG_INFO, BA_STR("BATestABI10: downloads_for_request"));
}

static int abi10_trap(void *context, const ba_host_api *host, const ba_asset_pack *pack)
{
    (void)context;
    (void)host;
    (void)pack;
    int *volatile target = NULL;
    *target = 10; /* the host read past the 1.0 descriptor */
    return 0;
}

static const struct {
    ba_extension_desc_1_0 descriptor;
    ba_should_download_fn past_the_end;
} abi10 = {
    .descriptor =
        {
            .struct_size = (uint32_t)sizeof(ba_extension_desc_1_0),
            .abi_major = 1,
            .abi_minor = 0,
            .name = "BATestABI10",
            .name_length = sizeof("BATestABI10") - 1,
            .version = "1.0.0",
            .version_length = sizeof("1.0.0") - 1,
            .downloads_for_request = abi10_downloads_for_request,
        },
    .past_the_end = abi10_trap,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return (const ba_extension_desc *)(const void *)&abi10.descriptor;
}

/*
 * BATestFlood: a misbehaving extension for the tests. downloads_for_request adds 100,000
 * downloads and keeps going when add_download refuses them: the host must bound what it keeps
 * and reject the call as a whole. Logs how many adds were refused at the end.
 */
#include "ba_extension.h"

#include <stdio.h>

#define FLOOD_COUNT 100000

static void flood_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (host == NULL || host->add_download == NULL) return;
    int refused = 0;
    for (int i = 0; i < FLOOD_COUNT; i++) {
        char identifier[32], url[80];
        int identifier_length = snprintf(identifier, sizeof identifier, "asset-%06d", i);
        int url_length = snprintf(url, sizeof url, "https://assets.example.com/asset-%06d.bin", i);
        if (identifier_length < 0 || url_length < 0) continue;
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .identifier = identifier,
            .identifier_length = (size_t)identifier_length,
            .url = url,
            .url_length = (size_t)url_length,
            .file_size = 1024,
            .priority = BA_PRIORITY_DEFAULT,
        };
        int32_t code = 0;
        if (host->add_download(&download, &code) != BA_OK) refused++;
    }
    if (host->log != NULL) {
        char message[96];
        int length = snprintf(message, sizeof message, "BATestFlood: add_download refused %d of %d downloads", refused, FLOOD_COUNT);
        if (length > 0) host->log(BA_LOG_INFO, message, (size_t)length);
    }
}

static const ba_extension_desc flood_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestFlood",
    .name_length = sizeof("BATestFlood") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = flood_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &flood_descriptor;
}

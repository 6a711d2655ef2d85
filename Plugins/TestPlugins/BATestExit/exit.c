/*
 * BATestExit: a misbehaving extension for the tests. downloads_for_request adds one valid
 * download and then ends the process with _exit(3): the host must report the exit (and still
 * report the download sent before it).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ba_extension.h"

#include <unistd.h>

static void exit_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (host != NULL && host->add_download != NULL) {
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .identifier = "before-exit",
            .identifier_length = sizeof("before-exit") - 1,
            .url = "https://assets.example.com/before-exit.bin",
            .url_length = sizeof("https://assets.example.com/before-exit.bin") - 1,
            .file_size = 1,
            .priority = BA_PRIORITY_DEFAULT,
        };
        int32_t code = 0;
        (void)host->add_download(&download, &code);
    }
    _exit(3);
}

static const ba_extension_desc exit_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestExit",
    .name_length = sizeof("BATestExit") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = exit_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &exit_descriptor;
}

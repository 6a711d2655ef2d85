/*
 * BATestBadIdentifiers: an extension for the tests that returns downloads the host must reject
 * one by one, each with a reason (path escapes, '/', empty, duplicate, embedded NUL, plain http,
 * essential without a size, negative size), mixed with three valid ones (ok-1, ok-2,
 * loopback-http).
 */
#include "ba_extension.h"

#include <stdio.h>

typedef struct {
    const char *identifier;
    size_t identifier_length;
    const char *url;
    int64_t file_size;
    uint32_t flags;
    int64_t priority;
} bad_case;

/* In the order they are added. Lengths are explicit so "bad\0id" keeps its NUL. */
static const bad_case bad_cases[] = {
    {BA_STR("../escape"), "https://assets.example.com/escape.bin", 1, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("a/b"), "https://assets.example.com/a-b.bin", 1, 0, BA_PRIORITY_DEFAULT},
    {BA_STR(""), "https://assets.example.com/empty.bin", 1, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("ok-1"), "https://assets.example.com/ok-1.bin", 10, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("ok-1"), "https://assets.example.com/ok-1-again.bin", 10, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("bad\0id"), "https://assets.example.com/nul.bin", 1, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("plain-http"), "http://assets.example.com/x.bin", 1, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("essential-no-size"), "https://assets.example.com/essential.bin", 0, BA_DOWNLOAD_FLAG_ESSENTIAL, BA_PRIORITY_DEFAULT},
    {BA_STR("negative-size"), "https://assets.example.com/negative.bin", -5, 0, BA_PRIORITY_DEFAULT},
    {BA_STR("ok-2"), "https://assets.example.com/ok-2.bin", 20, 0, BA_PRIORITY_MAX},
    {BA_STR("loopback-http"), "http://127.0.0.1:8080/a.bin", 1, 0, BA_PRIORITY_DEFAULT},
};

static size_t text_length(const char *text)
{
    size_t n = 0;
    while (text[n] != '\0') n++;
    return n;
}

static void bad_identifiers_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (host == NULL || host->add_download == NULL) return;
    int refused = 0;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .flags = c->flags,
            .identifier = c->identifier_length > 0 ? c->identifier : NULL,
            .identifier_length = c->identifier_length,
            .url = c->url,
            .url_length = text_length(c->url),
            .file_size = c->file_size,
            .priority = c->priority,
        };
        int32_t code = 0;
        if (host->add_download(&download, &code) != BA_OK) refused++;
    }
    if (host->log != NULL) {
        char message[80];
        int length = snprintf(message, sizeof message, "BATestBadIdentifiers: add_download refused %d of %zu", refused,
                              sizeof bad_cases / sizeof bad_cases[0]);
        if (length > 0) host->log(BA_LOG_INFO, message, (size_t)length);
    }
}

static const ba_extension_desc bad_identifiers_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestBadIdentifiers",
    .name_length = sizeof("BATestBadIdentifiers") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = bad_identifiers_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &bad_identifiers_descriptor;
}

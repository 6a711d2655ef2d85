/*
 * BATestChatty: an extension whose manifest says how much to log and what to return, for the
 * tests of large install calls (issue 19). downloads_for_request reads its manifest line by line:
 *   log N BYTES        log N lines of exactly BYTES bytes (at most 4096): "BATestChatty line I "
 *                      padded with 'x' (5,000 lines of 2,000 bytes made `ba install` lose its reply)
 *   IDENTIFIER URL     return a download (neither has spaces; declared fileSize 2, so each file is
 *                      2 bytes long)
 * and logs "BATestChatty: returned N downloads" at the end.
 */
#include "ba_extension.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void flood(const ba_host_api *host, long lines, long bytes)
{
    static char line[4096];
    if (bytes <= 0 || bytes > (long)sizeof line) return;
    for (long i = 0; i < lines; i++) {
        memset(line, 'x', (size_t)bytes);
        int prefix = snprintf(line, (size_t)bytes, "BATestChatty line %ld ", i);
        if (prefix > 0 && prefix < bytes) line[prefix] = 'x'; /* overwrite snprintf's NUL */
        host->log(BA_LOG_INFO, line, (size_t)bytes);
    }
}

static void chatty_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    if (host == NULL || host->log == NULL || host->add_download == NULL || request == NULL) return;
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)request->manifest_path_length, request->manifest_path);
    FILE *manifest = fopen(path, "r");
    if (manifest == NULL) return;
    int returned = 0;
    char entry[4096];
    while (fgets(entry, sizeof entry, manifest) != NULL) {
        entry[strcspn(entry, "\r\n")] = 0;
        long lines = 0, bytes = 0;
        if (sscanf(entry, "log %ld %ld", &lines, &bytes) == 2) {
            flood(host, lines, bytes);
            continue;
        }
        char *space = strchr(entry, ' ');
        if (space == NULL) continue;
        *space = 0;
        const char *url = space + 1;
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .identifier = entry,
            .identifier_length = strlen(entry),
            .url = url,
            .url_length = strlen(url),
            .file_size = 2,
            .priority = BA_PRIORITY_DEFAULT,
        };
        int32_t code = 0;
        if (host->add_download(&download, &code) == BA_OK) returned++;
    }
    fclose(manifest);
    char summary[96];
    int length = snprintf(summary, sizeof summary, "BATestChatty: returned %d downloads", returned);
    if (length > 0) host->log(BA_LOG_INFO, summary, (size_t)length);
}

BA_EXTENSION_DEFINE("BATestChatty", "1.0.0", .downloads_for_request = chatty_downloads_for_request)

/*
 * BATestChatty: an extension that logs far more than a report can carry (issue 19: 5,000 lines of
 * 2,000 bytes made `ba install` lose its reply). downloads_for_request logs 5,000 lines of exactly
 * 2,000 bytes ("BATestChatty line N " padded with 'x'), then returns one download per line of its
 * manifest, `IDENTIFIER URL` (both without spaces; each file one byte long, its declared fileSize),
 * and logs "BATestChatty: returned N downloads".
 */
#include "ba_extension.h"

#include <stdio.h>
#include <string.h>

#define CHATTY_LINES 5000
#define CHATTY_LINE_BYTES 2000

static void chatty_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    if (host == NULL || host->log == NULL || host->add_download == NULL || request == NULL) return;
    static char line[CHATTY_LINE_BYTES];
    for (int i = 0; i < CHATTY_LINES; i++) {
        memset(line, 'x', sizeof line);
        int prefix = snprintf(line, sizeof line, "BATestChatty line %d ", i);
        if (prefix > 0 && (size_t)prefix < sizeof line) line[prefix] = 'x'; /* overwrite snprintf's NUL */
        host->log(BA_LOG_INFO, line, sizeof line);
    }
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)request->manifest_path_length, request->manifest_path);
    FILE *manifest = fopen(path, "r");
    if (manifest == NULL) return;
    int returned = 0;
    char entry[4096];
    while (fgets(entry, sizeof entry, manifest) != NULL) {
        entry[strcspn(entry, "\r\n")] = 0;
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
            .file_size = 1,
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

/*
 * BATestChatty: an extension whose manifest says how much to log and what to return, for the
 * tests of large install calls (issue 19). downloads_for_request reads its manifest line by line:
 *   log N BYTES        log N lines of exactly BYTES bytes (at most 4096): "BATestChatty line I "
 *                      padded with 'x' (5,000 lines of 2,000 bytes made `ba install` lose its reply)
 *   IDENTIFIER URL     return a download (neither has spaces; declared fileSize 2, so each file is
 *                      2 bytes long)
 * and logs "BATestChatty: returned N downloads" at the end.
 * download_finished: a download whose identifier starts with "fanout" schedules 10,000 downloads
 * (BADownloadManager.scheduleDownload from the finished callback), "IDENTIFIER-child-I" at the
 * finished download's URL with "-child" appended, and logs "BATestChatty: scheduled N"; any
 * other finished file is taken (removed).
 */
#include "ba_extension.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void chatty_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                     const char *path, size_t path_length)
{
    (void)context;
    char file[4096];
    if (path != NULL && path_length < sizeof file) {
        memcpy(file, path, path_length);
        file[path_length] = 0;
        unlink(file);
    }
    if (host == NULL || host->schedule_download == NULL || download == NULL || download->identifier == NULL
        || download->url == NULL || download->identifier_length < 6 || memcmp(download->identifier, "fanout", 6) != 0
        || download->identifier_length > 256 || download->url_length > 2048)
        return;
    char url[2100];
    snprintf(url, sizeof url, "%.*s-child", (int)download->url_length, download->url);
    int scheduled = 0;
    for (int i = 0; i < 10000; i++) {
        char identifier[300];
        snprintf(identifier, sizeof identifier, "%.*s-child-%d", (int)download->identifier_length,
                 download->identifier, i);
        ba_download child = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .identifier = identifier,
            .identifier_length = strlen(identifier),
            .url = url,
            .url_length = strlen(url),
            .file_size = 2,
            .priority = BA_PRIORITY_DEFAULT,
        };
        int32_t code = 0;
        if (host->schedule_download(&child, &code) == BA_OK) scheduled++;
    }
    char summary[64];
    int length = snprintf(summary, sizeof summary, "BATestChatty: scheduled %d", scheduled);
    if (length > 0 && host->log != NULL) host->log(BA_LOG_INFO, summary, (size_t)length);
}

BA_EXTENSION_DEFINE("BATestChatty", "1.0.0", .downloads_for_request = chatty_downloads_for_request,
                    .download_finished = chatty_download_finished)

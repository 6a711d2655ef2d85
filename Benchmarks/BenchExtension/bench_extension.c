/*
 * BenchExtension: the extension of Benchmarks/basd.sh's (g), an app installed and not running.
 * Built by the script with the C compiler (not a SwiftPM target):
 *   cc -shared -fPIC -O2 -I Sources/CBAExtension/include -o libBenchExtension.so bench_extension.c
 *
 * - downloads_for_request: returns every line of the manifest, `IDENTIFIER SIZE URL` (the format
 *   of docs/writing-an-extension-c.md), as a non-essential download (essential when the line
 *   ends with ` essential`), and logs how many and when
 *   (`returned N downloads (M refused by add_download) at SECONDS.NANOSECONDS`, CLOCK_REALTIME).
 * - download_finished / download_failed: appends `IDENTIFIER\n` to bench-finished.log /
 *   bench-failed.log in the app group container ($BA_APP_GROUP_CONTAINER, writable in the
 *   sandbox), one write(2) with O_APPEND per call, so the benchmark counts the calls that reached
 *   the extension by counting lines. The downloaded file is left where it is (basd deletes it).
 */
#define _POSIX_C_SOURCE 200809L

#include "ba_extension.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

static void bench_log(const ba_host_api *host, ba_log_level level, const char *message)
{
    if (host != NULL && host->log != NULL) host->log(level, message, strlen(message));
}

static void bench_downloads_for_request(void *context, const ba_host_api *host,
                                        const ba_content_request_info *request)
{
    (void)context;
    char path[LINE_MAX_BYTES];
    if (request == NULL || request->manifest_path == NULL || request->manifest_path_length == 0
        || request->manifest_path_length >= sizeof path) {
        bench_log(host, BA_LOG_ERROR, "BenchExtension: no manifest");
        return;
    }
    memcpy(path, request->manifest_path, request->manifest_path_length);
    path[request->manifest_path_length] = '\0';
    FILE *manifest = fopen(path, "r");
    if (manifest == NULL) {
        bench_log(host, BA_LOG_ERROR, "BenchExtension: cannot open the manifest");
        return;
    }
    char line[LINE_MAX_BYTES], identifier[256], url[2048], flag[16], message[160];
    long long size = 0;
    int added = 0, refused = 0;
    while (fgets(line, sizeof line, manifest) != NULL) {
        flag[0] = '\0';
        if (sscanf(line, "%255s %lld %2047s %15s", identifier, &size, url, flag) < 3) continue;
        ba_download download = {0};
        download.struct_size = (uint32_t)sizeof download;
        download.identifier = identifier;
        download.identifier_length = strlen(identifier);
        download.url = url;
        download.url_length = strlen(url);
        download.file_size = size;
        download.priority = BA_PRIORITY_DEFAULT;
        if (strcmp(flag, "essential") == 0) download.flags |= BA_DOWNLOAD_FLAG_ESSENTIAL;
        int32_t code = 0;
        if (host->add_download(&download, &code) == BA_OK) {
            added++;
        } else {
            refused++;
        }
    }
    fclose(manifest);
    /* When the set is returned, in CLOCK_REALTIME (no time namespace in the sandbox): the
     * benchmark measures from here to the last finished event. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(message, sizeof message, "BenchExtension: returned %d downloads (%d refused by add_download) at %lld.%09ld",
             added, refused, (long long)now.tv_sec, (long)now.tv_nsec);
    bench_log(host, refused == 0 ? BA_LOG_INFO : BA_LOG_ERROR, message);
}

/* Appends `identifier\n` to FILE in the app group container, in one write. */
static void bench_append(const ba_host_api *host, const char *file, const ba_download *download)
{
    const char *container = getenv("BA_APP_GROUP_CONTAINER");
    char path[LINE_MAX_BYTES], record[300];
    if (container == NULL || download == NULL || download->identifier == NULL
        || download->identifier_length >= sizeof record - 1) {
        bench_log(host, BA_LOG_ERROR, "BenchExtension: no app group container or no identifier");
        return;
    }
    int path_length = snprintf(path, sizeof path, "%s/%s", container, file);
    if (path_length < 0 || (size_t)path_length >= sizeof path) return;
    memcpy(record, download->identifier, download->identifier_length);
    record[download->identifier_length] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        char message[160];
        snprintf(message, sizeof message, "BenchExtension: cannot open %s: %s", file, strerror(errno));
        bench_log(host, BA_LOG_ERROR, message);
        return;
    }
    ssize_t written = write(fd, record, download->identifier_length + 1);
    if (written != (ssize_t)(download->identifier_length + 1)) bench_log(host, BA_LOG_ERROR, "BenchExtension: short write");
    close(fd);
}

static void bench_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                    const char *file_path, size_t file_path_length)
{
    (void)context;
    (void)file_path;
    (void)file_path_length;
    bench_append(host, "bench-finished.log", download);
}

static void bench_download_failed(void *context, const ba_host_api *host, const ba_download *download,
                                  const ba_error *error)
{
    (void)context;
    (void)error;
    bench_append(host, "bench-failed.log", download);
}

BA_EXTENSION_DEFINE("BenchExtension", "1.0.0", .downloads_for_request = bench_downloads_for_request,
                    .download_finished = bench_download_finished, .download_failed = bench_download_failed)

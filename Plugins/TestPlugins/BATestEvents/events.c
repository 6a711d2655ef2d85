/*
 * BATestEvents: an extension for the tests of many events in one runner. download_finished and
 * download_failed log "BATestEvents: <entry point> <identifier> call <n>", where n counts the
 * calls this process has made (1, 2, … while one runner serves several events), and then, by the
 * download's identifier:
 *   - "crash…": write through NULL (the host reports a crash with SIGSEGV);
 *   - "hang…":  sleep far past any deadline (the host kills it: timedOut);
 *   - anything else: return.
 */
#define _POSIX_C_SOURCE 200809L

#include "ba_extension.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned long calls;

static int starts_with(const ba_download *download, const char *prefix)
{
    size_t length = strlen(prefix);
    return download != NULL && download->identifier != NULL && download->identifier_length >= length
        && memcmp(download->identifier, prefix, length) == 0;
}

static void handle(const ba_host_api *host, const char *entry, const ba_download *download)
{
    calls += 1;
    if (host != NULL && host->log != NULL && download != NULL) {
        char line[512];
        int length = snprintf(line, sizeof line, "BATestEvents: %s %.*s call %lu", entry,
                              (int)(download->identifier_length > 256 ? 256 : download->identifier_length),
                              download->identifier != NULL ? download->identifier : "", calls);
        if (length > 0) host->log(BA_LOG_INFO, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
    }
    if (starts_with(download, "crash")) {
        /* A volatile pointer: the compiler cannot see it is NULL, so the store stays a real store. */
        int *volatile target = NULL;
        *target = 42;
    }
    if (starts_with(download, "hang")) {
        struct timespec forever = {.tv_sec = 3600, .tv_nsec = 0};
        while (nanosleep(&forever, &forever) != 0) {
        }
    }
}

static void events_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                     const char *path, size_t path_length)
{
    (void)context;
    handle(host, "download_finished", download);
    /* Handled: a regular file is taken (removed), as an extension that moves it away would leave
     * it; a file left in place is kept for the app (a case of its own, tested with
     * BATestAppleSample). Only a regular file: a host's test may hand it /dev/null. */
    char file[4096];
    struct stat info;
    if (path != NULL && path_length < sizeof file) {
        memcpy(file, path, path_length);
        file[path_length] = 0;
        if (lstat(file, &info) == 0 && S_ISREG(info.st_mode)) unlink(file);
    }
}

static void events_download_failed(void *context, const ba_host_api *host, const ba_download *download,
                                   const ba_error *error)
{
    (void)context;
    (void)error;
    handle(host, "download_failed", download);
}

static const ba_extension_desc events_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestEvents",
    .name_length = sizeof("BATestEvents") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .download_finished = events_download_finished,
    .download_failed = events_download_failed,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &events_descriptor;
}

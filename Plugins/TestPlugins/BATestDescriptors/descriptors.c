/*
 * BATestDescriptors: an extension for the tests that reports what it inherited. Its
 * downloads_for_request logs one line, "descriptors: FD=TARGET ...", naming every open file
 * descriptor of the runner process (from /proc/self/fd), so a test can check that nothing of its
 * host (basd's listening socket, client connections, its database) reaches extension code.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ba_extension.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void descriptors_downloads_for_request(void *context, const ba_host_api *host,
                                              const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    char line[8192];
    size_t used = (size_t)snprintf(line, sizeof(line), "descriptors:");
    DIR *directory = opendir("/proc/self/fd");
    if (directory == NULL) {
        host->log(BA_LOG_ERROR, BA_STR("descriptors: cannot open /proc/self/fd"));
        return;
    }
    int own = dirfd(directory);
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        int fd = atoi(entry->d_name);
        if (fd == own) continue;
        char path[64];
        char target[256];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t length = readlink(path, target, sizeof(target) - 1);
        if (length < 0) continue;
        target[length] = '\0';
        int written = snprintf(line + used, sizeof(line) - used, " %d=%s", fd, target);
        if (written < 0 || (size_t)written >= sizeof(line) - used) break;
        used += (size_t)written;
    }
    closedir(directory);
    host->log(BA_LOG_INFO, line, used);
}

static const ba_extension_desc descriptors_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestDescriptors",
    .name_length = sizeof("BATestDescriptors") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = descriptors_downloads_for_request,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &descriptors_descriptor;
}

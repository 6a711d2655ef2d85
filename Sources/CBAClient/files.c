/* libba_client: an app's local pack files, read from the disk without basd (ba_client.h), as the
 * Swift library's LocalPacks reads them: only basd's link form counts, then every folder and file
 * is opened one component at a time with O_NOFOLLOW, only a regular file is read, and never more
 * of it than its size when it was opened. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* basd's PackLimits: what basd never installs. */
#define MAX_PATH_BYTES 1024
#define MAX_COMPONENTS 64
#define MAX_VERSION ((INT64_C(1) << 53) - 1)

/* A pack ID that can name a link: one plain name, not hidden. */
static int plain_name(const char *id) {
    size_t length = id ? strlen(id) : 0;
    return length > 0 && length <= 255 && id[0] != '.' && strchr(id, '/') == NULL;
}

int ba_client_group_container(const char *group, const char *state_dir, char *buffer, size_t size, ba_client_error *error) {
    if (!plain_name(group) || buffer == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "a group name is needed");
    int written;
    if (state_dir != NULL) {
        written = snprintf(buffer, size, "%s/groups/%s", state_dir, group);
    } else {
        const char *data = getenv("XDG_DATA_HOME");
        const char *home = getenv("HOME");
        if (data != NULL && data[0] == '/') written = snprintf(buffer, size, "%s/background-assets/groups/%s", data, group);
        else if (home != NULL && home[0] == '/')
            written = snprintf(buffer, size, "%s/.local/share/background-assets/groups/%s", home, group);
        else return bac_fail(error, BA_CLIENT_E_ARGUMENT, ENOENT, "neither XDG_DATA_HOME nor HOME is set");
    }
    if (written < 0 || (size_t)written >= size) return bac_fail(error, BA_CLIENT_E_ARGUMENT, ENAMETOOLONG, "the buffer is too small");
    return 0;
}

/* Opens CONTAINER/AppAssetPacks/APP, the folder of the packs' links (links on the way to it are
 * basd's own and followed). */
static int open_links(const char *container, const char *bundle_id) {
    if (container == NULL || !plain_name(bundle_id)) {
        errno = EINVAL;
        return -1;
    }
    char path[PATH_MAX];
    int written = snprintf(path, sizeof path, "%s/AppAssetPacks/%s", container, bundle_id);
    if (written < 0 || (size_t)written >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The version `id`'s link in `links` names, when it is exactly ../.background-assets/packs/ID/N. */
static int64_t linked_version(int links, const char *id) {
    char target[4096];
    ssize_t length = readlinkat(links, id, target, sizeof target);
    if (length <= 0 || (size_t)length >= sizeof target) return BA_CLIENT_ABSENT;
    target[length] = '\0';
    static const char prefix[] = "../.background-assets/packs/";
    size_t id_length = strlen(id);
    if (strncmp(target, prefix, sizeof prefix - 1) != 0) return BA_CLIENT_ABSENT;
    const char *rest = target + sizeof prefix - 1;
    if (strncmp(rest, id, id_length) != 0 || rest[id_length] != '/') return BA_CLIENT_ABSENT;
    const char *number = rest + id_length + 1;
    size_t digits = strlen(number);
    if (digits < 1 || digits > 16) return BA_CLIENT_ABSENT;
    int64_t version = 0;
    for (size_t i = 0; i < digits; i++) {
        if (number[i] < '0' || number[i] > '9') return BA_CLIENT_ABSENT;
        version = version * 10 + (number[i] - '0');
    }
    return version <= MAX_VERSION ? version : BA_CLIENT_ABSENT;
}

/* Opens `id`'s current version folder: the link read, then `..`, `.background-assets`, `packs`,
 * `ID` and `N` one at a time without following links. A link switched (and its old version
 * removed) between the read and the opens is read again, a few times. -1 with errno. */
static int open_version(int links, const char *id) {
    for (int attempt = 0; attempt < 3; attempt++) {
        int64_t version = linked_version(links, id);
        if (version == BA_CLIENT_ABSENT) {
            errno = ENOENT;
            return -1;
        }
        char number[24];
        snprintf(number, sizeof number, "%" PRId64, version);
        const char *names[] = {".background-assets", "packs", id, number};
        int folder = openat(links, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        for (size_t i = 0; i < 4 && folder >= 0; i++) {
            int next = openat(folder, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int failure = errno;
            close(folder);
            folder = next;
            errno = failure;
        }
        if (folder >= 0) return folder;
        if (errno == ENOTDIR) errno = ELOOP; /* a link (or a file) where a folder should be */
        if (errno != ENOENT) return -1;
    }
    errno = ENOENT;
    return -1;
}

int64_t ba_client_local_version(const char *container, const char *bundle_id, const char *pack_id) {
    if (!plain_name(pack_id)) return BA_CLIENT_ABSENT;
    int links = open_links(container, bundle_id);
    if (links < 0) return BA_CLIENT_ABSENT;
    int64_t version = linked_version(links, pack_id);
    if (version != BA_CLIENT_ABSENT) {
        /* Only a link that leads to a version's folder counts. */
        int folder = open_version(links, pack_id);
        if (folder < 0) version = BA_CLIENT_ABSENT;
        else close(folder);
    }
    close(links);
    return version;
}

/* Splits `path` into its components (in `copy`): 0, or -1 when it is not a pack path. */
static int split_path(const char *path, char *copy, char **components, size_t *count) {
    size_t length = path ? strlen(path) : 0;
    if (length == 0 || length > MAX_PATH_BYTES || path[0] == '/') return -1;
    memcpy(copy, path, length + 1);
    *count = 0;
    for (char *save = NULL, *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || *count == MAX_COMPONENTS) return -1;
        components[(*count)++] = name;
    }
    return *count > 0 ? 0 : -1;
}

int ba_client_open_file(const char *container, const char *bundle_id, const char *pack_id, const char *path,
    ba_client_error *error) {
    char copy[MAX_PATH_BYTES + 1];
    char *components[MAX_COMPONENTS];
    size_t count;
    if (split_path(path, copy, components, &count) < 0)
        return bac_fail(error, BA_CLIENT_E_FILE, EINVAL, "%s is not a path inside a pack (relative, plain names, at most %d bytes and %d components)",
            path ? path : "(null)", MAX_PATH_BYTES, MAX_COMPONENTS);
    if (!plain_name(pack_id)) return bac_fail(error, BA_CLIENT_E_FILE, EINVAL, "%s is not a pack ID", pack_id ? pack_id : "(null)");
    int links = open_links(container, bundle_id);
    if (links < 0) {
        int failure = errno;
        return bac_fail(error, BA_CLIENT_E_FILE, failure, "asset pack %s is not local: %s", pack_id, strerror(failure));
    }
    int folder = open_version(links, pack_id);
    int failure = errno;
    close(links);
    if (folder < 0) return bac_fail(error, BA_CLIENT_E_FILE, failure, "asset pack %s is not local: %s", pack_id, strerror(failure));
    for (size_t i = 0; i + 1 < count; i++) {
        int next = openat(folder, components[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        failure = errno == ENOTDIR ? ELOOP : errno;
        close(folder);
        if (next < 0) return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s in asset pack %s: %s", path, pack_id, strerror(failure));
        folder = next;
    }
    /* What it is, before opening it: a FIFO or a device is never opened. */
    struct stat info;
    const char *name = components[count - 1];
    if (fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) != 0) {
        failure = errno;
        close(folder);
        return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s in asset pack %s: %s", path, pack_id, strerror(failure));
    }
    if (!S_ISREG(info.st_mode)) {
        close(folder);
        failure = S_ISLNK(info.st_mode) ? ELOOP : S_ISDIR(info.st_mode) ? EISDIR : ENODEV;
        return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s in asset pack %s is not a regular file", path, pack_id);
    }
    int fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    failure = errno;
    close(folder);
    if (fd < 0) return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s in asset pack %s: %s", path, pack_id, strerror(failure));
    /* Checked again on what was opened (it could have changed since). */
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        close(fd);
        return bac_fail(error, BA_CLIENT_E_FILE, ENODEV, "%s in asset pack %s is not a regular file", path, pack_id);
    }
    /* O_NONBLOCK only guarded the open. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int ba_client_read_file(const char *container, const char *bundle_id, const char *pack_id, const char *path,
    size_t max_bytes, void **data, size_t *size, ba_client_error *error) {
    if (data == NULL || size == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no data or size");
    *data = NULL;
    *size = 0;
    int fd = ba_client_open_file(container, bundle_id, pack_id, path, error);
    if (fd < 0) return -1;
    struct stat info;
    if (fstat(fd, &info) != 0 || info.st_size < 0) {
        int failure = errno;
        close(fd);
        return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s: %s", path, strerror(failure));
    }
    if ((uint64_t)info.st_size > (uint64_t)max_bytes || (uint64_t)info.st_size >= SIZE_MAX) {
        close(fd);
        return bac_fail(error, BA_CLIENT_E_FILE, EFBIG, "%s in asset pack %s has %lld bytes, over the %zu asked for", path,
            pack_id, (long long)info.st_size, max_bytes);
    }
    size_t length = (size_t)info.st_size;
    char *buffer = malloc(length + 1);
    if (buffer == NULL) {
        close(fd);
        return bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
    }
    /* At most the size it had when it was opened: a file that grows meanwhile is not read further. */
    size_t got = 0;
    while (got < length) {
        ssize_t count = pread(fd, buffer + got, length - got, (off_t)got);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) {
            int failure = errno;
            free(buffer);
            close(fd);
            return bac_fail(error, BA_CLIENT_E_FILE, failure, "%s: %s", path, strerror(failure));
        }
        if (count == 0) break;
        got += (size_t)count;
    }
    close(fd);
    buffer[got] = '\0';
    *data = buffer;
    *size = got;
    return 0;
}

int ba_client_read(ba_client *client, const char *pack_id, const char *path, size_t max_bytes, void **data, size_t *size,
    ba_client_error *error) {
    if (client == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no client");
    if (client->container == NULL)
        return bac_fail(error, BA_CLIENT_E_NOT_ACCEPTED, 0, "basd has no app group container for this app: packs need BAAppGroupID");
    return ba_client_read_file(client->container, client->bundle_id, pack_id, path, max_bytes, data, size, error);
}

/*
 * ba_client.h: an app's asset packs from C, through basd's socket (docs/c-client.md).
 *
 * Link with libba_client (`pkg-config --cflags --libs ba-client`). The library is plain C: it
 * needs no Swift runtime, no other library than libc, and no basd to read a pack's files.
 *
 * Versioning (the rules of ba_extension.h)
 *   - BA_CLIENT_VERSION_MAJOR changes only when a function or an existing field changes meaning or
 *     place; BA_CLIENT_VERSION_MINOR grows when functions are added or fields appended at the end
 *     of a struct. ba_client_version() says which library the program runs with: a program built
 *     against minor M checks `ba_client_version() >= BA_CLIENT_VERSION` before it calls what M
 *     added.
 *   - Every struct that crosses the boundary starts with `uint32_t struct_size`. A struct the
 *     library returns (a pack, an event) is read only as far as its struct_size covers; the one
 *     struct the caller allocates (ba_client_error) says its own size (BA_CLIENT_ERROR_INIT), and
 *     the library writes no further.
 *
 * Strings
 *   UTF-8, NUL-terminated, never containing NUL (basd's strings with a NUL are refused). A
 *   string field that basd did not send is NULL; a number it did not send is BA_CLIENT_ABSENT.
 *
 * Ownership
 *   What a function returns through a pointer is the caller's, freed with the matching
 *   ba_client_*_free. Strings inside a returned struct live as long as the struct.
 *
 * Threads
 *   A ba_client is used by one thread at a time. Different ba_client values are independent.
 *
 * Errors
 *   Functions return 0 (or a count) on success and -1 on failure, with `error` (when not NULL)
 *   filled: `code` is one of ba_client_code (basd's own error codes pass through unchanged), and
 *   `sys_errno` the errno of the failing system call, or 0. Match on `code` and `sys_errno`, never
 *   on the message.
 */
#ifndef BA_CLIENT_H
#define BA_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BA_CLIENT_VERSION_MAJOR 1
#define BA_CLIENT_VERSION_MINOR 0
/* (major << 16) | minor: what this header declares. */
#define BA_CLIENT_VERSION ((BA_CLIENT_VERSION_MAJOR << 16) | BA_CLIENT_VERSION_MINOR)

#if defined(__GNUC__) || defined(__clang__)
#define BA_CLIENT_API __attribute__((visibility("default")))
#else
#define BA_CLIENT_API
#endif

/* The version of the library the program runs with: (major << 16) | minor. */
BA_CLIENT_API uint32_t ba_client_version(void);

/* A number basd did not send. */
#define BA_CLIENT_ABSENT (-1)

/* Error codes. basd's codes (docs/protocol.md, "Errors") pass through: a failed download's
 * code, the pack codes 1100-1110, and others basd may add. */
typedef enum ba_client_code {
    /* basd's downloadInvalid: a download failed and basd gave no other code. */
    BA_CLIENT_E_DOWNLOAD_FAILED = 0,
    /* basd cannot be reached (sys_errno says why), or it does not accept the app (not registered). */
    BA_CLIENT_E_NOT_ACCEPTED = 55,
    /* The connection broke or basd closed it (also: basd died); or basd refused the request on
     * this connection (a probe that asked to ensure or remove). */
    BA_CLIENT_E_CONNECTION = 56,
    /* A wait ran out of time. */
    BA_CLIENT_E_TIMEOUT = 110,
    /* basd sent a frame of length 0 or above BA_CLIENT_MAX_FRAME (the connection is closed). */
    BA_CLIENT_E_INVALID_FRAME = 1000,
    /* basd sent a frame that is not a JSON object within the reader's bounds (depth, counts), or
     * a string with a NUL or bad UTF-8 (the connection is closed); also basd's answer to a hello
     * it cannot read (a probe, to a basd older than probes). */
    BA_CLIENT_E_INVALID_MESSAGE = 1001,
    /* basd: a field it does not accept; also the client's answer to a pack the app does not have. */
    BA_CLIENT_E_INVALID_REQUEST = 1006,
    /* The offline reader: a file that cannot be read (sys_errno: ENOENT not local or not there,
     * ELOOP a link where a folder or file should be, EINVAL not a pack path, EISDIR/ENODEV not a
     * regular file, EFBIG over the caller's bound). */
    BA_CLIENT_E_FILE = 2000,
    /* A wrong argument (NULL where a value is needed, a client that is closed). */
    BA_CLIENT_E_ARGUMENT = 2001,
    /* Out of memory. */
    BA_CLIENT_E_NO_MEMORY = 2002,
} ba_client_code;

typedef struct ba_client_error {
    uint32_t struct_size; /* set by BA_CLIENT_ERROR_INIT */
    int code;             /* a ba_client_code, or another code of basd's */
    int sys_errno;        /* the errno of the system call that failed, else 0 */
    char message[256];    /* for people: what failed and what to do */
} ba_client_error;

#define BA_CLIENT_ERROR_INIT {sizeof(ba_client_error), 0, 0, {0}}

/* The largest frame either side sends (docs/protocol.md, "Framing"). */
#define BA_CLIENT_MAX_FRAME (1u << 20)

/* ---- Connecting ---------------------------------------------------------------------------- */

typedef struct ba_client ba_client;

/* Connects to basd as the app `bundle_id` and says hello: the app's first hello marks it launched
 * (Apple's first launch; its pre-launch limits end). `socket_path` NULL: $BA_SOCKET, else
 * $XDG_RUNTIME_DIR/background-assets/basd.sock, else /tmp/background-assets-UID/basd.sock.
 * Returns NULL on failure (55: basd not running, or the app not registered). */
BA_CLIENT_API ba_client *ba_client_connect(const char *bundle_id, const char *socket_path, ba_client_error *error);

/* Connects as a probe of the app (a launcher, a status bar): the app is NOT marked launched, and
 * the connection may only list packs and follow their events (ensure, remove, cancel and check
 * are refused with 56). A basd older than probes refuses the hello (1001) and changes nothing. */
BA_CLIENT_API ba_client *ba_client_connect_probe(
    const char *bundle_id, const char *socket_path, ba_client_error *error);

/* Closes the connection and frees the client (NULL is ignored). */
BA_CLIENT_API void ba_client_close(ba_client *client);

/* How long a request waits for basd's answer, in milliseconds (default 30000; 0: forever). */
BA_CLIENT_API void ba_client_set_timeout(ba_client *client, int milliseconds);

/* The app group container basd named in its welcome (the packs are under it), or NULL when the
 * app has no app group. Valid while the client is. */
BA_CLIENT_API const char *ba_client_app_group_container(const ba_client *client);

/* ---- Packs --------------------------------------------------------------------------------- */

/* Apple's status flags, and basd's `failed` (a PackInfo's `status`). */
typedef enum ba_client_status {
    BA_CLIENT_STATUS_DOWNLOAD_AVAILABLE = 1 << 0,
    BA_CLIENT_STATUS_UPDATE_AVAILABLE = 1 << 1,
    BA_CLIENT_STATUS_UP_TO_DATE = 1 << 2,
    BA_CLIENT_STATUS_OUT_OF_DATE = 1 << 3,
    BA_CLIENT_STATUS_OBSOLETE = 1 << 4,
    BA_CLIENT_STATUS_DOWNLOADING = 1 << 5,
    BA_CLIENT_STATUS_DOWNLOADED = 1 << 6,
    BA_CLIENT_STATUS_FAILED = 1 << 16,
} ba_client_status;

/* One pack of the app, as basd lists it (a PackInfo, docs/protocol.md). */
typedef struct ba_client_pack {
    uint32_t struct_size;
    const char *id;          /* assetPackID */
    const char *policy;      /* "essential", "prefetch", "onDemand", or NULL */
    const char *status;      /* the flags as basd wrote them, e.g. "downloaded,upToDate" */
    uint32_t status_flags;   /* ba_client_status bits of `status` */
    int64_t local_version;   /* the version whose files are at `path`, or BA_CLIENT_ABSENT */
    int64_t server_version;  /* the newest version the manifest lists, or BA_CLIENT_ABSENT */
    int64_t download_size;   /* the stored bytes of the server version */
    int64_t bytes_present;   /* while downloading */
    int64_t bytes_total;     /* while downloading */
    int64_t fetch_bytes;     /* what ensuring it now fetches from the network (newer basds) */
    int64_t write_bytes;     /* what ensuring it now writes to the disk (newer basds) */
    const char *language;    /* the server version's BCP-47 language (newer basds), or NULL */
    const char *path;        /* the local version's folder, or NULL */
    const char *waiting_for; /* why it waits: "space", "meteredNetwork", "offline", … or NULL */
    const char *error;       /* the last failure, for people, or NULL */
    int64_t error_code;      /* the code of `error`, or BA_CLIENT_ABSENT */
} ba_client_pack;

typedef struct ba_client_pack_list {
    uint32_t struct_size;
    size_t count;
    ba_client_pack **packs;
} ba_client_pack_list;

/* The app's packs. *out is the caller's (ba_client_pack_list_free). */
BA_CLIENT_API int ba_client_packs(ba_client *client, ba_client_pack_list **out, ba_client_error *error);

/* One pack (NULL in *out, and 0 returned, when the app has no such pack). */
BA_CLIENT_API int ba_client_pack_info(
    ba_client *client, const char *pack_id, ba_client_pack **out, ba_client_error *error);

BA_CLIENT_API void ba_client_pack_list_free(ba_client_pack_list *list);
BA_CLIENT_API void ba_client_pack_free(ba_client_pack *pack);

/* Called as bytes arrive: `bytes_present` of `bytes_total` (> 0). */
typedef void (*ba_client_progress_fn)(void *context, const char *pack_id, int64_t bytes_present, int64_t bytes_total);

/* ba_client_ensure's flags. */
#define BA_CLIENT_REQUIRE_LATEST 1u

/* Makes `pack_id` local and waits until it is (BA_CLIENT_REQUIRE_LATEST: its newest version),
 * calling `progress` (may be NULL) as bytes arrive; `timeout_ms` 0 waits as long as it takes.
 * The pack as it is then goes to *out when `out` is not NULL. Errors: 1006 no such pack; 1100-1110
 * a refused manifest or index; the failed download's code (0 when it had none) and its message;
 * 110 timeout; 56 basd went away. Other packs' events stay queued for ba_client_next_event. */
BA_CLIENT_API int ba_client_ensure(
    ba_client *client, const char *pack_id, unsigned flags, ba_client_progress_fn progress, void *context,
    int timeout_ms, ba_client_pack **out, ba_client_error *error);

/* Removes the pack's local files (it stays listed, to download again). */
BA_CLIENT_API int ba_client_remove(ba_client *client, const char *pack_id, ba_client_error *error);

/* Stops the pack's download (what is verified is kept for next time). */
BA_CLIENT_API int ba_client_cancel(ba_client *client, const char *pack_id, ba_client_error *error);

/* Reads the download manifest again; *out (may be NULL) gets the packs as they stand after it:
 * an update being fetched has BA_CLIENT_STATUS_DOWNLOADING, a pack no longer listed
 * BA_CLIENT_STATUS_OBSOLETE. */
BA_CLIENT_API int ba_client_check_for_updates(ba_client *client, ba_client_pack_list **out, ba_client_error *error);

/* ---- Events -------------------------------------------------------------------------------- */

typedef enum ba_client_event_kind {
    BA_CLIENT_EVENT_OTHER = 0, /* a kind this library does not know (see kind_name) */
    BA_CLIENT_EVENT_BEGAN,
    BA_CLIENT_EVENT_PAUSED,
    BA_CLIENT_EVENT_PROGRESS,
    BA_CLIENT_EVENT_FINISHED,
    BA_CLIENT_EVENT_FAILED,
    BA_CLIENT_EVENT_REMOVED,
    BA_CLIENT_EVENT_OBSOLETE,
} ba_client_event_kind;

/* One pack event (a packEvent, docs/protocol.md). */
typedef struct ba_client_event {
    uint32_t struct_size;
    ba_client_event_kind kind;
    const char *kind_name;   /* as basd sent it */
    const char *pack_id;
    int64_t version;         /* or BA_CLIENT_ABSENT */
    int64_t bytes_present;   /* progress */
    int64_t bytes_total;     /* progress */
    const char *waiting_for; /* paused: why, or NULL */
    const char *message;     /* failed: why, or NULL */
    int64_t error_code;      /* failed: basd's code, or BA_CLIENT_ABSENT */
} ba_client_event;

/* Asks basd for the app's pack events from now on (once per connection; ensure does it too). */
BA_CLIENT_API int ba_client_follow(ba_client *client, ba_client_error *error);

/* The socket, for poll/epoll/select: POLLIN means ba_client_next_event may have something, and
 * POLLHUP that basd went away. The library may already hold events it read during another call
 * (ba_client_pending_events says how many): drain with ba_client_next_event after every call
 * into the library, before polling again. */
BA_CLIENT_API int ba_client_fd(const ba_client *client);

/* How many events the library holds already read. */
BA_CLIENT_API size_t ba_client_pending_events(const ba_client *client);

/* The next pack event without waiting: 1 and *out (ba_client_event_free), 0 when there is none
 * now, -1 on error (56 when basd went away: the connection is closed). */
BA_CLIENT_API int ba_client_next_event(ba_client *client, ba_client_event **out, ba_client_error *error);

/* The next pack event, waiting up to `timeout_ms` (0: forever): 1, 0 on timeout, -1 on error. */
BA_CLIENT_API int ba_client_wait_event(
    ba_client *client, int timeout_ms, ba_client_event **out, ba_client_error *error);

BA_CLIENT_API void ba_client_event_free(ba_client_event *event);

/* ---- Reading pack files, with or without basd ---------------------------------------------- */

/* The files of app `bundle_id`'s local packs are under CONTAINER/AppAssetPacks/APP/ID, a link basd
 * keeps to the pack's current, read-only version. The reader follows that link only when it has
 * basd's form (../.background-assets/packs/ID/N), and below it opens one component at a time with
 * O_NOFOLLOW: no link, `..`, FIFO, device or path over basd's bounds (1024 bytes, 64 components)
 * is followed or opened. Errors are BA_CLIENT_E_FILE with sys_errno. */

/* The app group container of `group` in basd's state folder `state_dir` (NULL: $XDG_DATA_HOME/
 * background-assets, else ~/.local/share/background-assets), into `buffer`. */
BA_CLIENT_API int ba_client_group_container(
    const char *group, const char *state_dir, char *buffer, size_t size, ba_client_error *error);

/* The local version of `pack_id` as its link says, or BA_CLIENT_ABSENT when it is not local. */
BA_CLIENT_API int64_t ba_client_local_version(const char *container, const char *bundle_id, const char *pack_id);

/* Opens `path` (relative, plain names) in the local version of `pack_id`, read-only: a regular
 * file's descriptor (the caller closes it), or -1. */
BA_CLIENT_API int ba_client_open_file(
    const char *container, const char *bundle_id, const char *pack_id, const char *path, ba_client_error *error);

/* Reads all of such a file, at most `max_bytes` (EFBIG when it is larger): *data (free() it,
 * NUL-terminated beyond *size) and *size. */
BA_CLIENT_API int ba_client_read_file(
    const char *container, const char *bundle_id, const char *pack_id, const char *path, size_t max_bytes,
    void **data, size_t *size, ba_client_error *error);

/* The same through a connection: its app and the container basd named. */
BA_CLIENT_API int ba_client_read(
    ba_client *client, const char *pack_id, const char *path, size_t max_bytes, void **data, size_t *size,
    ba_client_error *error);

#ifdef __cplusplus
}
#endif

#endif /* BA_CLIENT_H */

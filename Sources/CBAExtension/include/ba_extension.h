/*
 * ba_extension.h: the C ABI between a Background Assets extension (a shared library) and its host.
 *
 * An extension exports exactly one symbol, `ba_extension_descriptor`, returning a pointer to a
 * constant descriptor that lives as long as the library is loaded. The host (ba-extension-runner)
 * calls the entry points named in the descriptor, one per process, and hands each call a constant
 * host-API table through which the extension talks back.
 *
 * Versioning
 *   - BA_EXTENSION_ABI_MAJOR changes only when an existing field changes meaning or place. The
 *     host refuses a descriptor whose major differs from its own.
 *   - BA_EXTENSION_ABI_MINOR grows when fields are appended at the end of a struct, or a flag is
 *     added that an older host must not ignore (1.2: BA_DOWNLOAD_FLAG_ASSET_PACK). The host
 *     refuses a descriptor whose minor is newer than its own, and keeps loading older minors.
 *   - Every struct that crosses the boundary starts with `uint32_t struct_size`: the reader uses a
 *     field only if `struct_size` covers it. The first three fields of the descriptor
 *     (struct_size, abi_major, abi_minor) never move, in any major.
 *
 * Strings
 *   UTF-8, passed as a pointer and an explicit length in bytes; they need not be NUL-terminated
 *   and must not contain NUL. A NULL pointer with length 0 is the empty or absent string.
 *
 * Ownership (the same rule everywhere)
 *   - Everything the host passes to the extension is borrowed: valid until the call that received
 *     it returns. Copy what you keep (but extensions keep nothing between calls: each call runs in
 *     a fresh process).
 *   - Everything the extension passes to a host function is borrowed by the host for the duration
 *     of that host function only: the host copies what it keeps before returning.
 *   - The descriptor and the strings it points to are owned by the extension and must stay valid
 *     while the library is loaded (use static storage).
 *
 * Threads
 *   Host functions may be called from any thread, but only while the entry point that received
 *   the table is running; calls after it returned are ignored.
 *
 * See docs/c-abi.md for the full contract and a worked example.
 */
#ifndef BA_EXTENSION_H
#define BA_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BA_EXTENSION_ABI_MAJOR 1
#define BA_EXTENSION_ABI_MINOR 2

/* Name of the one symbol an extension exports. */
#define BA_EXTENSION_DESCRIPTOR_SYMBOL "ba_extension_descriptor"

/* Marks the descriptor function for export from the shared library. */
#if defined(__GNUC__) || defined(__clang__)
#define BA_EXTENSION_EXPORT __attribute__((visibility("default")))
#else
#define BA_EXTENSION_EXPORT
#endif

/* Helper for string literals: BA_STR("text") expands to the pointer and the length. */
#define BA_STR(literal) (literal), (sizeof(literal) - 1)

/* BAContentRequest raw values (Apple's). */
typedef int32_t ba_content_request;
#define BA_CONTENT_REQUEST_INSTALL 1
#define BA_CONTENT_REQUEST_UPDATE 2
#define BA_CONTENT_REQUEST_PERIODIC 3
#define BA_CONTENT_REQUEST_LANGUAGE_CHANGE 4 /* the user's language changed (ba simulate language-change) */

/* BADownload.State raw values (Apple's). */
typedef int32_t ba_download_state;
#define BA_DOWNLOAD_STATE_FAILED (-1)
#define BA_DOWNLOAD_STATE_CREATED 0
#define BA_DOWNLOAD_STATE_WAITING 1
#define BA_DOWNLOAD_STATE_DOWNLOADING 2
#define BA_DOWNLOAD_STATE_FINISHED 3

/* BADownload.Priority: any int64; higher is more important. */
#define BA_PRIORITY_MIN 0
#define BA_PRIORITY_DEFAULT 50
#define BA_PRIORITY_MAX 100

/* Status codes returned by host functions: 0 is success, anything else is a BAErrorCode raw
 * value (Apple's numbering), e.g. 100 downloadAlreadyScheduled, 101 downloadNotScheduled. */
typedef int32_t ba_status;
#define BA_OK 0
#define BA_ERROR_DOWNLOAD_INVALID 0 /* only ever returned together with a message; see last_error_message */
#define BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED 50
#define BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED 100
#define BA_ERROR_DOWNLOAD_NOT_SCHEDULED 101
#define BA_ERROR_DOWNLOAD_ESSENTIAL_NOT_PERMITTED 109
/* Linux additions (outside Apple's numbering). */
#define BA_ERROR_EXCLUSIVE_CONTROL_NOT_ACQUIRED 1001 /* lock held elsewhere past the timeout */
#define BA_ERROR_NO_APP_GROUP_CONTAINER 1002        /* this call has no app group container */
#define BA_ERROR_CALL_NOT_VALID_NOW 1003            /* e.g. add_download outside downloads_for_request */
/* Host functions that can fail return BA_FAILED with the BAErrorCode in *code_out when that
 * pointer is non-NULL, because BAErrorCode 0 (downloadInvalid) collides with BA_OK. On success
 * they return BA_OK and write 0 to *code_out. */
#define BA_FAILED (-1)

/* Log levels for host->log. */
typedef int32_t ba_log_level;
#define BA_LOG_DEBUG 0
#define BA_LOG_INFO 1
#define BA_LOG_NOTICE 2
#define BA_LOG_ERROR 3

/* URLSession.AuthChallengeDisposition raw values (Apple's), returned by the challenge entry point. */
typedef int32_t ba_challenge_disposition;
#define BA_CHALLENGE_USE_CREDENTIAL 0
#define BA_CHALLENGE_PERFORM_DEFAULT_HANDLING 1
#define BA_CHALLENGE_CANCEL 2
#define BA_CHALLENGE_REJECT_PROTECTION_SPACE 3

/* Download flags. A host ignores flags it does not know (an older host downloads anyway). */
#define BA_DOWNLOAD_FLAG_ESSENTIAL 0x1u
/* Wait while the network is metered (NetworkManager says so), essential or not: Apple's
 * URLRequest.allowsExpensiveNetworkAccess (or allowsConstrainedNetworkAccess) set to false. */
#define BA_DOWNLOAD_FLAG_NO_METERED_NETWORK 0x2u
/* ABI 1.2: the download is an asset pack from a self-hosted manifest (Swift's
 * AssetPack.download(for:)): identifier is the pack's ID, url its index's URL, sha256_hex the
 * index's SHA-256 (required) and file_size the pack's download size. The host installs the pack
 * into the app group instead of delivering one file. (A 1.2 extension needs a 1.2 host: an older
 * one refuses its descriptor, so it never takes the index for a file.) */
#define BA_DOWNLOAD_FLAG_ASSET_PACK 0x4u

/* One HTTP request header. */
typedef struct ba_header {
    const char *name;
    size_t name_length;
    const char *value;
    size_t value_length;
} ba_header;

/* A download, in either direction.
 * Extension -> host (add_download, schedule_download): identifier and url are required; the host
 *   ignores unique_identifier and state.
 * Host -> extension (entry points, current_downloads): every field is filled in. */
typedef struct ba_download {
    uint32_t struct_size;        /* sizeof(ba_download) of the writer */
    uint32_t flags;              /* BA_DOWNLOAD_FLAG_* */
    const char *identifier;      /* required, unique within the app: no '/', no "..", no NUL */
    size_t identifier_length;
    const char *url;             /* https, or http to a loopback host */
    size_t url_length;
    const char *application_group_identifier; /* optional */
    size_t application_group_identifier_length;
    int64_t file_size;           /* expected size in bytes; 0 = unknown; required > 0 if essential */
    int64_t priority;            /* BA_PRIORITY_MIN..BA_PRIORITY_MAX by convention */
    const ba_header *headers;    /* array of header_count request headers, or NULL */
    size_t header_count;
    const char *unique_identifier; /* host -> extension only */
    size_t unique_identifier_length;
    ba_download_state state;     /* host -> extension only */
    uint32_t reserved;           /* zero */
    const char *sha256_hex;      /* optional, 64 hex digits: the host verifies the finished file */
    size_t sha256_hex_length;
} ba_download;

/* Why a download failed (host -> extension). */
typedef struct ba_error {
    uint32_t struct_size;
    int32_t code;                /* BAErrorCode raw value, or the code of `domain` */
    const char *domain;          /* e.g. "com.apple.backgroundassets.error" */
    size_t domain_length;
    const char *message;         /* human-readable reason */
    size_t message_length;
} ba_error;

/* What the extension is asked for (host -> extension), mirroring
 * downloads(for:manifestURL:extensionInfo:). */
typedef struct ba_content_request_info {
    uint32_t struct_size;
    ba_content_request request;  /* BA_CONTENT_REQUEST_* */
    const char *manifest_path;   /* local read-only copy of the manifest; deleted after the call */
    size_t manifest_path_length;
    const char *manifest_url;    /* where the manifest came from (BAManifestURL) */
    size_t manifest_url_length;
    int64_t restricted_download_size_remaining;           /* bytes; -1 = no restriction (nil) */
    int64_t restricted_essential_download_size_remaining; /* bytes; -1 = no restriction (nil) */
} ba_content_request_info;

/* An authentication challenge (host -> extension). */
typedef struct ba_auth_challenge {
    uint32_t struct_size;
    int32_t previous_failure_count;
    const char *host_name;       /* the server's host name */
    size_t host_name_length;
    int32_t port;
    uint32_t reserved;
    const char *protocol;        /* "https", "http" */
    size_t protocol_length;
    const char *realm;           /* may be empty */
    size_t realm_length;
    const char *authentication_method; /* e.g. "NSURLAuthenticationMethodHTTPBasic" */
    size_t authentication_method_length;
} ba_auth_challenge;

/* An asset pack the system is about to download (host -> extension, should_download). ABI 1.1.
 * Mirrors Swift's AssetPack: the download manifest's entry for one version of one pack. */
typedef struct ba_asset_pack {
    uint32_t struct_size;        /* sizeof(ba_asset_pack) of the host */
    uint32_t reserved;           /* zero */
    const char *id;              /* the pack's assetPackID */
    size_t id_length;
    int64_t version;             /* the version that would be downloaded */
    int64_t download_size;       /* bytes a first download fetches (the stored chunks) */
    const char *user_info;       /* the manifest's userInfo as JSON bytes, or NULL with length 0 */
    size_t user_info_length;
} ba_asset_pack;

typedef void (*ba_download_visitor)(void *user_data, const ba_download *download);

/* The host-API table passed to every entry point. Constant; only ever grows at its end: check
 * struct_size (or abi_minor) before using a field added after 1.0. Every function may be called
 * from any thread while the entry point runs. */
typedef struct ba_host_api {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Writes a line to the host's log. */
    void (*log)(ba_log_level level, const char *message, size_t message_length);

    /* Returns one download from downloads_for_request (the C form of returning a Set<BADownload>).
     * Only valid inside downloads_for_request. Returns BA_OK, or BA_FAILED with the BAErrorCode
     * in *code_out (e.g. when the call returned too many downloads, or the struct is unreadable).
     * BA_OK means "received": the host validates the whole set after the entry point returns
     * (identifier rules, duplicates, URL scheme, sizes, essential only for install/update: 109)
     * and rejects what breaks a rule, with a reason. */
    ba_status (*add_download)(const ba_download *download, int32_t *code_out);

    /* BADownloadManager.scheduleDownload. Refused (code 50) while downloads_for_request runs:
     * return downloads from it instead. */
    ba_status (*schedule_download)(const ba_download *download, int32_t *code_out);

    /* BADownloadManager.cancel: code 101 if no download has that identifier. */
    ba_status (*cancel_download)(const char *identifier, size_t identifier_length, int32_t *code_out);

    /* BADownloadManager.fetchCurrentDownloads: calls `visit` once per download, synchronously,
     * before returning. The download passed to `visit` is borrowed for that visit only. */
    ba_status (*current_downloads)(ba_download_visitor visit, void *user_data, int32_t *code_out);

    /* BADownloadManager.withExclusiveControl: acquires the app group's exclusive-control lock.
     * timeout_ms: 0 = try once, -1 = wait as long as it takes, else wait at most that long.
     * Returns BA_OK when held. Released by release_exclusive_control or when the process ends. */
    ba_status (*acquire_exclusive_control)(int64_t timeout_ms, int32_t *code_out);
    /* Releases the lock; BA_OK also when it was not held. */
    ba_status (*release_exclusive_control)(int32_t *code_out);

    /* Answers the current authentication challenge with a credential; only valid inside
     * download_received_challenge, before returning BA_CHALLENGE_USE_CREDENTIAL. */
    ba_status (*use_credential)(const char *user, size_t user_length,
                                const char *password, size_t password_length, int32_t *code_out);

    /* The human-readable reason for the last BA_FAILED on the calling thread, borrowed until the
     * next failing host call on that thread. Writes the length to *length_out (which may be
     * NULL). Returns NULL with length 0 if nothing has failed on this thread. */
    const char *(*last_error_message)(size_t *length_out);
} ba_host_api;

/* Entry points. `context` is the descriptor's context field, passed back unchanged. */

/* downloads(for:manifestURL:extensionInfo:): return downloads with host->add_download. */
typedef void (*ba_downloads_for_request_fn)(void *context, const ba_host_api *host,
                                            const ba_content_request_info *request);
/* backgroundDownload(_:finishedWithFileURL:): the file is deleted after the call unless moved. */
typedef void (*ba_download_finished_fn)(void *context, const ba_host_api *host,
                                        const ba_download *download,
                                        const char *file_path, size_t file_path_length);
/* backgroundDownload(_:failedWithError:). */
typedef void (*ba_download_failed_fn)(void *context, const ba_host_api *host,
                                      const ba_download *download, const ba_error *error);
/* backgroundDownload(_:didReceive:): returns a BA_CHALLENGE_* disposition. */
typedef ba_challenge_disposition (*ba_download_challenge_fn)(void *context, const ba_host_api *host,
                                                             const ba_download *download,
                                                             const ba_auth_challenge *challenge);
/* extensionWillTerminate(): the call is about to be ended by the host. Keep it short. */
typedef void (*ba_extension_will_terminate_fn)(void *context, const ba_host_api *host);
/* ManagedDownloaderExtension.shouldDownload(_:) (ABI 1.1): called once per candidate pack, all in
 * one process, before the system downloads the essential and prefetch packs of an install or
 * update. Return nonzero to download the pack, 0 to leave it (it stays available: the app can
 * still ask for it). Only log, current_downloads and the exclusive-control functions are valid
 * inside it. NULL (or a 1.0 descriptor) means "download them all", the system default. */
typedef int (*ba_should_download_fn)(void *context, const ba_host_api *host, const ba_asset_pack *pack);

/* The descriptor. A NULL entry point is "not implemented". */
typedef struct ba_extension_desc {
    uint32_t struct_size;        /* sizeof(ba_extension_desc) of the extension's header */
    uint16_t abi_major;          /* BA_EXTENSION_ABI_MAJOR */
    uint16_t abi_minor;          /* BA_EXTENSION_ABI_MINOR */
    const char *name;            /* e.g. "com.example.app.assets" */
    size_t name_length;
    const char *version;         /* e.g. "1.2.0" */
    size_t version_length;
    void *context;               /* passed back to every entry point; may be NULL */
    ba_downloads_for_request_fn downloads_for_request;
    ba_download_finished_fn download_finished;
    ba_download_failed_fn download_failed;
    ba_download_challenge_fn download_received_challenge;
    ba_extension_will_terminate_fn extension_will_terminate;
    /* ABI 1.1: read only when struct_size covers it (a 1.0 descriptor ends before it). */
    ba_should_download_fn should_download;
} ba_extension_desc;

/* The one exported symbol. Called once per process, with no arguments; must not block.
 * Define it in your extension exactly as declared (the declaration lets the compiler check it):
 *   BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void) { return &descriptor; }
 * Define BA_EXTENSION_NO_DESCRIPTOR_PROTOTYPE before including this header to leave it out. */
typedef const ba_extension_desc *(*ba_extension_descriptor_fn)(void);
#ifndef BA_EXTENSION_NO_DESCRIPTOR_PROTOTYPE
BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);
#endif

/* BA_EXTENSION_DEFINE(name, version, entry points...): the descriptor and the exported
 * ba_extension_descriptor function in one line, with the lengths, struct_size and ABI version
 * filled in (after GStreamer's GST_PLUGIN_DEFINE). `name` and `version` must be string literals;
 * the rest are designated initializers of ba_extension_desc, in any order (C; C++20 needs them
 * in field order):
 *
 *   BA_EXTENSION_DEFINE("com.example.app.assets", "1.0.0",
 *                       .downloads_for_request = my_downloads_for_request,
 *                       .extension_will_terminate = my_will_terminate)
 *
 * Use it once per library, at file scope. It only writes what a hand-made descriptor would:
 * nothing of the ABI changes. */
#define BA_EXTENSION_DEFINE(name_literal, version_literal, ...)                                   \
    static const ba_extension_desc ba_extension_defined_descriptor_ = {                          \
        .struct_size = (uint32_t)sizeof(ba_extension_desc),                                      \
        .abi_major = BA_EXTENSION_ABI_MAJOR,                                                     \
        .abi_minor = BA_EXTENSION_ABI_MINOR,                                                     \
        .name = "" name_literal "",                                                              \
        .name_length = sizeof(name_literal) - 1,                                                 \
        .version = "" version_literal "",                                                        \
        .version_length = sizeof(version_literal) - 1,                                           \
        __VA_ARGS__};                                                                            \
    BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)                   \
    {                                                                                            \
        return &ba_extension_defined_descriptor_;                                                \
    }

#ifdef __cplusplus
}
#endif

#endif /* BA_EXTENSION_H */

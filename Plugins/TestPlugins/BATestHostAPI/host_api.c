/*
 * BATestHostAPI: an extension for the tests that exercises the host-API table and logs what each
 * host function answered: schedule_download during downloads_for_request (refused, code 50),
 * current_downloads, the exclusive-control lock, add_download; schedule_download and
 * cancel_download after a finished download; the error of a failed download; use_credential.
 */
#include "ba_extension.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__) || defined(__clang__)
#define HOST_API_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HOST_API_PRINTF(f, a)
#endif

/* For "%.*s" with a length-delimited string that may be NULL (lengths clamped to 64 KiB). */
static int text_length(const char *p, size_t n)
{
    return p == NULL ? 0 : (int)(n > 65536 ? 65536 : n);
}
#define SV(p, n) text_length((p), (n)), ((p) != NULL ? (p) : "")

static void logf_host(const ba_host_api *host, const char *format, ...) HOST_API_PRINTF(2, 3);

static void logf_host(const ba_host_api *host, const char *format, ...)
{
    if (host == NULL || host->log == NULL) return;
    char message[2048];
    va_list args;
    va_start(args, format);
    int length = vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (length < 0) return;
    host->log(BA_LOG_INFO, message, (size_t)length < sizeof message ? (size_t)length : sizeof message - 1);
}

/* True when the table holds every 1.0 function (a test host might pass a shorter one). */
static int host_is_complete(const ba_host_api *host)
{
    return host != NULL && host->struct_size >= sizeof(ba_host_api) && host->log != NULL && host->add_download != NULL
           && host->schedule_download != NULL && host->cancel_download != NULL && host->current_downloads != NULL
           && host->acquire_exclusive_control != NULL && host->release_exclusive_control != NULL
           && host->use_credential != NULL && host->last_error_message != NULL;
}

static ba_download make_download(const char *identifier, size_t identifier_length, const char *url, size_t url_length,
                                 int64_t file_size)
{
    ba_download download = {
        .struct_size = (uint32_t)sizeof(ba_download),
        .identifier = identifier,
        .identifier_length = identifier_length,
        .url = url,
        .url_length = url_length,
        .file_size = file_size,
        .priority = BA_PRIORITY_DEFAULT,
    };
    return download;
}

static void log_current(void *user_data, const ba_download *download)
{
    const ba_host_api *host = user_data;
    if (download == NULL) {
        logf_host(host, "current: (NULL download)");
        return;
    }
    logf_host(host, "current: %.*s state=%d", SV(download->identifier, download->identifier_length), (int)download->state);
}

static void host_api_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (!host_is_complete(host)) {
        logf_host(host, "host table incomplete");
        return;
    }

    /* (a) Scheduling during downloads(for:) must be refused with code 50 and a reason. */
    ba_download early = make_download(BA_STR("scheduled-too-early"), BA_STR("https://assets.example.com/early.bin"), 1);
    int32_t code = -1;
    ba_status status = host->schedule_download(&early, &code);
    size_t message_length = 0;
    const char *message = host->last_error_message(&message_length);
    logf_host(host, "schedule-during-request: status=%d code=%d msg=%.*s", (int)status, (int)code, SV(message, message_length));

    /* (b) The app's current downloads. */
    code = -1;
    status = host->current_downloads(log_current, (void *)host, &code);
    logf_host(host, "current-downloads: status=%d code=%d", (int)status, (int)code);

    /* (c) The exclusive-control lock, try once. */
    int32_t acquire_code = -1, release_code = -1;
    ba_status acquired = host->acquire_exclusive_control(0, &acquire_code);
    ba_status released = host->release_exclusive_control(&release_code);
    logf_host(host, "lock: acquire=%d release=%d (codes %d %d)", (int)acquired, (int)released, (int)acquire_code,
              (int)release_code);

    /* (d) The one download returned. */
    ba_download returned = make_download(BA_STR("from-host-api"), BA_STR("https://assets.example.com/h.bin"), 1);
    code = -1;
    status = host->add_download(&returned, &code);
    if (status != BA_OK) logf_host(host, "add: status=%d code=%d", (int)status, (int)code);

    /* (e) */
    logf_host(host, "done");
}

static void host_api_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                       const char *file_path, size_t file_path_length)
{
    (void)context;
    if (!host_is_complete(host)) {
        logf_host(host, "host table incomplete");
        return;
    }
    ba_download follow_up = make_download(BA_STR("follow-up"), BA_STR("https://assets.example.com/f.bin"), 1);
    int32_t code = -1;
    ba_status status = host->schedule_download(&follow_up, &code);
    logf_host(host, "schedule-after-finish: status=%d code=%d", (int)status, (int)code);

    code = -1;
    status = host->cancel_download(BA_STR("does-not-exist"), &code);
    logf_host(host, "cancel-unknown: status=%d code=%d", (int)status, (int)code);

    const char *identifier = download != NULL ? download->identifier : NULL;
    size_t identifier_length = download != NULL ? download->identifier_length : 0;
    logf_host(host, "finished %.*s %.*s", SV(identifier, identifier_length), SV(file_path, file_path_length));
}

static void host_api_download_failed(void *context, const ba_host_api *host, const ba_download *download, const ba_error *error)
{
    (void)context;
    const char *identifier = download != NULL ? download->identifier : NULL;
    size_t identifier_length = download != NULL ? download->identifier_length : 0;
    logf_host(host, "failed %.*s code=%d %.*s", SV(identifier, identifier_length), error != NULL ? (int)error->code : 0,
              SV(error != NULL ? error->message : NULL, error != NULL ? error->message_length : 0));
}

static ba_challenge_disposition host_api_download_received_challenge(void *context, const ba_host_api *host,
                                                                     const ba_download *download,
                                                                     const ba_auth_challenge *challenge)
{
    (void)context;
    (void)download;
    (void)challenge;
    if (!host_is_complete(host)) {
        logf_host(host, "host table incomplete");
        return BA_CHALLENGE_PERFORM_DEFAULT_HANDLING;
    }
    int32_t code = -1;
    ba_status status = host->use_credential(BA_STR("user"), BA_STR("secret"), &code);
    logf_host(host, "use-credential: status=%d code=%d", (int)status, (int)code);
    return BA_CHALLENGE_USE_CREDENTIAL;
}

static const ba_extension_desc host_api_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestHostAPI",
    .name_length = sizeof("BATestHostAPI") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = host_api_downloads_for_request,
    .download_finished = host_api_download_finished,
    .download_failed = host_api_download_failed,
    .download_received_challenge = host_api_download_received_challenge,
    .extension_will_terminate = NULL,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &host_api_descriptor;
}

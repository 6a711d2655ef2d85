/*
 * BATestShouldDownload: a C extension for the tests with the ABI 1.1 should_download entry point.
 * It declines the asset pack "extras", writes through NULL (a crash) for the pack "crash", forges
 * an answer frame with no answers on the runner's protocol socket (fd 3) for the pack "forge" (a
 * hostile extension: the host must not trust it), and wants every other one, logging "should_download ID VERSION SIZE USERINFO: yes|no" for each.
 * Its downloads_for_request returns nothing, as a managed extension's does, and logs
 * "downloads_for_request N" with the content request N (4: a language change).
 */
#include "ba_extension.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int equals(const char *text, size_t length, const char *literal)
{
    return length == strlen(literal) && memcmp(text, literal, length) == 0;
}

static int test_should_download(void *context, const ba_host_api *host, const ba_asset_pack *pack)
{
    (void)context;
    if (equals(pack->id, pack->id_length, "crash")) {
        host->log(BA_LOG_INFO, BA_STR("should_download crash: writing through NULL"));
        int *volatile target = NULL;
        *target = 42;
    }
    if (equals(pack->id, pack->id_length, "forge")) {
        /* A runner frame: u32 length 5, type 10 (pack decisions), u32 count 0; little-endian. */
        const unsigned char frame[] = {5, 0, 0, 0, 10, 0, 0, 0, 0};
        ssize_t written = write(3, frame, sizeof(frame));
        (void)written;
        return 1;
    }
    int answer = !equals(pack->id, pack->id_length, "extras");
    char line[512];
    int length = snprintf(line, sizeof(line), "should_download %.*s %lld %lld %.*s: %s", (int)pack->id_length,
                          pack->id, (long long)pack->version, (long long)pack->download_size,
                          pack->user_info != NULL ? (int)pack->user_info_length : 3,
                          pack->user_info != NULL ? pack->user_info : "nil", answer ? "yes" : "no");
    if (length > 0) host->log(BA_LOG_INFO, line, (size_t)length < sizeof(line) ? (size_t)length : sizeof(line) - 1);
    return answer;
}

static void test_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    /* Says which content request it was (BA_CONTENT_REQUEST_*), for the tests of languageChange. */
    char line[64];
    int length = snprintf(line, sizeof(line), "downloads_for_request %d", (int)request->request);
    if (length > 0) host->log(BA_LOG_INFO, line, (size_t)length < sizeof(line) ? (size_t)length : sizeof(line) - 1);
}

BA_EXTENSION_DEFINE("BATestShouldDownload", "1.1.0", .downloads_for_request = test_downloads_for_request,
                    .should_download = test_should_download)

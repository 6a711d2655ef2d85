/*
 * BATestHang: a misbehaving extension for the tests. downloads_for_request forks a child that
 * hangs, then hangs itself: the host must kill the whole process group at its deadline.
 * Also implements extension_will_terminate, which the host calls shortly before the kill.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ba_extension.h"

#include <unistd.h>

static void hang_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    (void)request;
    if (host != NULL && host->log != NULL) host->log(BA_LOG_INFO, BA_STR("BATestHang: forking and hanging"));
    /* The child (or, if fork failed, only the parent) hangs too; it must die with the group. */
    (void)fork();
    for (;;) pause();
}

static void hang_will_terminate(void *context, const ba_host_api *host)
{
    (void)context;
    if (host != NULL && host->log != NULL) host->log(BA_LOG_NOTICE, BA_STR("BATestHang: will terminate"));
}

static const ba_extension_desc hang_descriptor = {
    .struct_size = (uint32_t)sizeof(ba_extension_desc),
    .abi_major = BA_EXTENSION_ABI_MAJOR,
    .abi_minor = BA_EXTENSION_ABI_MINOR,
    .name = "BATestHang",
    .name_length = sizeof("BATestHang") - 1,
    .version = "1.0.0",
    .version_length = sizeof("1.0.0") - 1,
    .context = NULL,
    .downloads_for_request = hang_downloads_for_request,
    .extension_will_terminate = hang_will_terminate,
};

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void);

BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void)
{
    return &hang_descriptor;
}

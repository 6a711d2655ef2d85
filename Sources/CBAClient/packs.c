/* libba_client: the app's packs (list, ensure, remove, cancel, check) (ba_client.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t status_flags(const char *status) {
    static const struct {
        const char *name;
        uint32_t flag;
    } names[] = {
        {"downloadAvailable", BA_CLIENT_STATUS_DOWNLOAD_AVAILABLE}, {"updateAvailable", BA_CLIENT_STATUS_UPDATE_AVAILABLE},
        {"upToDate", BA_CLIENT_STATUS_UP_TO_DATE}, {"outOfDate", BA_CLIENT_STATUS_OUT_OF_DATE},
        {"obsolete", BA_CLIENT_STATUS_OBSOLETE}, {"downloading", BA_CLIENT_STATUS_DOWNLOADING},
        {"downloaded", BA_CLIENT_STATUS_DOWNLOADED}, {"failed", BA_CLIENT_STATUS_FAILED},
    };
    uint32_t flags = 0;
    const char *word = status;
    while (word != NULL && *word) {
        const char *end = strchr(word, ',');
        size_t length = end ? (size_t)(end - word) : strlen(word);
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == length && memcmp(names[i].name, word, length) == 0) flags |= names[i].flag;
        word = end ? end + 1 : NULL;
    }
    return flags;
}

ba_client_pack *bac_pack_from_json(const bac_json *json, int32_t object) {
    enum { count = 7 };
    const char *keys[count] = {"assetPackID", "policy", "status", "language", "path", "waitingFor", "error"};
    const char *strings[count];
    size_t size = sizeof(ba_client_pack);
    for (size_t i = 0; i < count; i++) {
        strings[i] = bac_json_string(json, bac_json_member(json, object, keys[i]));
        size += strings[i] ? strlen(strings[i]) + 1 : 0;
    }
    if (strings[0] == NULL) return NULL;
    ba_client_pack *pack = calloc(1, size);
    if (pack == NULL) return NULL;
    const char **fields[count] = {
        &pack->id, &pack->policy, &pack->status, &pack->language, &pack->path, &pack->waiting_for, &pack->error};
    char *at = (char *)(pack + 1);
    for (size_t i = 0; i < count; i++) {
        if (strings[i] == NULL) continue;
        size_t length = strlen(strings[i]) + 1;
        memcpy(at, strings[i], length);
        *fields[i] = at;
        at += length;
    }
    pack->struct_size = sizeof(*pack);
    pack->status_flags = status_flags(pack->status);
    int64_t *numbers[] = {&pack->local_version, &pack->server_version, &pack->download_size, &pack->bytes_present,
        &pack->bytes_total, &pack->fetch_bytes, &pack->write_bytes, &pack->error_code};
    const char *number_keys[] = {"localVersion", "serverVersion", "downloadSize", "bytesPresent", "bytesTotal",
        "fetchBytes", "writeBytes", "errorCode"};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        if (bac_json_integer(json, bac_json_member(json, object, number_keys[i]), numbers[i]) < 0)
            *numbers[i] = BA_CLIENT_ABSENT;
    return pack;
}

void ba_client_pack_free(ba_client_pack *pack) { free(pack); }

void ba_client_pack_list_free(ba_client_pack_list *list) {
    if (list == NULL) return;
    for (size_t i = 0; i < list->count; i++) free(list->packs[i]);
    free(list->packs);
    free(list);
}

/* Sends a `packs` command: {"action": ACTION[, "pack": PACK][EXTRA]}; its answer's packs into
 * *out (when not NULL). */
static int packs_command(ba_client *client, const char *action, const char *pack_id, const char *extra,
    ba_client_pack_list **out, ba_client_error *error) {
    if (client == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no client");
    if (out) *out = NULL;
    char body[1024];
    snprintf(body, sizeof body, "{\"type\":\"packs\",\"packs\":{\"action\":\"%s\"", action);
    if (pack_id != NULL) {
        if (pack_id[0] == '\0' || strlen(pack_id) > 255)
            return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "a pack ID of 1 to 255 bytes is needed");
        strcat(body, ",\"pack\":");
        if (bac_json_quote(body, sizeof body - 64, pack_id) < 0)
            return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "the pack ID is too long");
    }
    strcat(body, extra ? extra : "");
    strcat(body, "}}");
    bac_json answer;
    int32_t result;
    if (bac_request(client, body, &answer, &result, error) < 0) return -1;
    int status = 0;
    if (out != NULL) {
        int32_t array = bac_json_member(&answer, bac_json_member(&answer, result, "packs"), "packs");
        ba_client_pack_list *list = calloc(1, sizeof(*list));
        size_t capacity = bac_json_type_of(&answer, array) == BAC_JSON_ARRAY ? answer.values[array].length : 0;
        if (list == NULL || (capacity > 0 && (list->packs = calloc(capacity, sizeof(ba_client_pack *))) == NULL)) {
            free(list);
            bac_json_free(&answer);
            return bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
        }
        list->struct_size = sizeof(*list);
        for (int32_t item = capacity ? answer.values[array].first : -1; item >= 0; item = answer.values[item].next) {
            if (bac_json_type_of(&answer, item) != BAC_JSON_OBJECT) continue;
            ba_client_pack *pack = bac_pack_from_json(&answer, item);
            if (pack == NULL) {
                if (bac_json_member(&answer, item, "assetPackID") < 0) continue; /* not a pack: skipped */
                ba_client_pack_list_free(list);
                bac_json_free(&answer);
                return bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
            }
            list->packs[list->count++] = pack;
        }
        *out = list;
    }
    bac_json_free(&answer);
    return status;
}

int ba_client_packs(ba_client *client, ba_client_pack_list **out, ba_client_error *error) {
    if (out == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no out");
    return packs_command(client, "list", NULL, NULL, out, error);
}

/* Takes `pack_id`'s pack out of `list` (NULL when it is not there) and frees the list. */
static ba_client_pack *take_pack(ba_client_pack_list *list, const char *pack_id) {
    ba_client_pack *found = NULL;
    for (size_t i = 0; list != NULL && i < list->count; i++) {
        if (found == NULL && strcmp(list->packs[i]->id, pack_id) == 0) {
            found = list->packs[i];
            list->packs[i] = NULL;
        }
    }
    ba_client_pack_list_free(list);
    return found;
}

int ba_client_pack_info(ba_client *client, const char *pack_id, ba_client_pack **out, ba_client_error *error) {
    if (out == NULL || pack_id == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no pack ID or out");
    ba_client_pack_list *list;
    if (ba_client_packs(client, &list, error) < 0) return -1;
    *out = take_pack(list, pack_id);
    return 0;
}

int ba_client_remove(ba_client *client, const char *pack_id, ba_client_error *error) {
    if (pack_id == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no pack ID");
    return packs_command(client, "remove", pack_id, NULL, NULL, error);
}

int ba_client_cancel(ba_client *client, const char *pack_id, ba_client_error *error) {
    if (pack_id == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no pack ID");
    return packs_command(client, "cancel", pack_id, NULL, NULL, error);
}

int ba_client_check_for_updates(ba_client *client, ba_client_pack_list **out, ba_client_error *error) {
    return packs_command(client, "check", NULL, NULL, out, error);
}

/* Whether `pack` is local as asked. */
static int satisfied(const ba_client_pack *pack, unsigned flags) {
    if (pack->local_version == BA_CLIENT_ABSENT) return 0;
    if (!(flags & BA_CLIENT_REQUIRE_LATEST) || pack->server_version == BA_CLIENT_ABSENT) return 1;
    return pack->local_version >= pack->server_version;
}

int ba_client_ensure(ba_client *client, const char *pack_id, unsigned flags, ba_client_progress_fn progress,
    void *context, int timeout_ms, ba_client_pack **out, ba_client_error *error) {
    if (out) *out = NULL;
    if (client == NULL || pack_id == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no client or pack ID");
    int64_t deadline = timeout_ms > 0 ? bac_now() + timeout_ms : 0;
    /* Following first: no event of this download can come before it and be missed. */
    if (ba_client_follow(client, error) < 0) return -1;
    ba_client_pack_list *list;
    const char *extra = (flags & BA_CLIENT_REQUIRE_LATEST) ? ",\"requireLatest\":true" : ",\"requireLatest\":false";
    if (packs_command(client, "ensure", pack_id, extra, &list, error) < 0) return -1;
    ba_client_pack *pack = take_pack(list, pack_id);
    if (pack == NULL)
        return bac_fail(error, BA_CLIENT_E_INVALID_REQUEST, 0, "the app has no asset pack %s", pack_id);
    for (;;) {
        if (satisfied(pack, flags)) {
            if (out) *out = pack;
            else free(pack);
            return 0;
        }
        if (!(pack->status_flags & BA_CLIENT_STATUS_DOWNLOADING)) {
            bac_fail(error, pack->error_code == BA_CLIENT_ABSENT ? BA_CLIENT_E_DOWNLOAD_FAILED : (int)pack->error_code, 0,
                "%s: %s", pack_id, pack->error ? pack->error : "basd did not start downloading it");
            free(pack);
            return -1;
        }
        ba_client_event *event;
        while ((event = bac_take_event(client, pack_id)) == NULL) {
            if (deadline > 0 && bac_now() >= deadline) {
                free(pack);
                return bac_fail(error, BA_CLIENT_E_TIMEOUT, ETIMEDOUT, "%s is not local yet (timed out)", pack_id);
            }
            if (bac_receive(client, 1, deadline, error) < 0) {
                free(pack);
                return -1;
            }
        }
        ba_client_event_kind kind = event->kind;
        if (kind == BA_CLIENT_EVENT_PROGRESS && progress != NULL && event->bytes_total > 0)
            progress(context, pack_id, event->bytes_present < 0 ? 0 : event->bytes_present, event->bytes_total);
        if (kind == BA_CLIENT_EVENT_FAILED) {
            bac_fail(error, event->error_code == BA_CLIENT_ABSENT ? BA_CLIENT_E_DOWNLOAD_FAILED : (int)event->error_code, 0,
                "%s: %s", pack_id, event->message ? event->message : "the download failed");
            free(event);
            free(pack);
            return -1;
        }
        free(event);
        if (kind == BA_CLIENT_EVENT_FINISHED || kind == BA_CLIENT_EVENT_REMOVED || kind == BA_CLIENT_EVENT_OBSOLETE) {
            free(pack);
            if (ba_client_pack_info(client, pack_id, &pack, error) < 0) return -1;
            if (pack == NULL) return bac_fail(error, BA_CLIENT_E_INVALID_REQUEST, 0, "the app no longer has asset pack %s", pack_id);
        }
    }
}

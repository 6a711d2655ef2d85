/* What the parts of libba_client share (not installed). */
#ifndef BA_CLIENT_INTERNAL_H
#define BA_CLIENT_INTERNAL_H

#include "ba_client.h"
#include "json.h"

#include <stdarg.h>

#define BAC_HIDDEN __attribute__((visibility("hidden")))

/* Events held beyond this many are dropped, oldest first (a queued progress event of a pack is
 * replaced by its next one, so only an app that never reads its events comes near it). */
#define BAC_MAX_QUEUED_EVENTS 4096

typedef struct bac_event_node {
    struct bac_event_node *next;
    ba_client_event *event;
} bac_event_node;

struct ba_client {
    int fd;
    int probe;
    int following;
    int timeout_ms;
    uint64_t next_id;
    char *bundle_id;
    char *container;
    /* Bytes read from the socket, not yet a whole frame. */
    unsigned char *buffer;
    size_t buffered;
    size_t capacity;
    bac_event_node *first_event;
    bac_event_node *last_event;
    size_t queued;
};

/* Fills `error` (when not NULL, as far as its struct_size says); returns -1. */
BAC_HIDDEN int bac_fail(ba_client_error *error, int code, int sys_errno, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* Sends `body` (a JSON request without its id: "{\"type\":…}" ) with the next id and waits for its
 * answer, keeping the events that come first: the parsed frame in *answer (the caller frees it),
 * its `result` in *result. basd's error answers become -1 with basd's code. */
BAC_HIDDEN int bac_request(
    ba_client *client, const char *body, bac_json *answer, int32_t *result, ba_client_error *error);

/* Reads what basd sent and keeps the events: with `wait`, waits for one frame until `deadline`
 * (milliseconds of CLOCK_MONOTONIC, 0: none); then takes what else is there. 1 when a frame was
 * read, 0 when none was (timeout), -1 on error (the connection is closed). */
BAC_HIDDEN int bac_receive(ba_client *client, int wait, int64_t deadline, ba_client_error *error);

/* Milliseconds of CLOCK_MONOTONIC. */
BAC_HIDDEN int64_t bac_now(void);

/* Takes the first queued event of `pack_id` (any pack when NULL), or NULL. */
BAC_HIDDEN ba_client_event *bac_take_event(ba_client *client, const char *pack_id);

/* A PackInfo object as a ba_client_pack (one allocation), or NULL (out of memory, no ID). */
BAC_HIDDEN ba_client_pack *bac_pack_from_json(const bac_json *json, int32_t object);

/* Appends `text` to `out` as a JSON string (quotes and escapes). 0, or -1 when it does not fit. */
BAC_HIDDEN int bac_json_quote(char *out, size_t size, const char *text);

#endif

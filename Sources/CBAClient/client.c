/* libba_client: the connection to basd, its frames and the app's pack events (ba_client.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

uint32_t ba_client_version(void) { return BA_CLIENT_VERSION; }

int bac_fail(ba_client_error *error, int code, int sys_errno, const char *format, ...) {
    if (error == NULL || error->struct_size < offsetof(ba_client_error, sys_errno) + sizeof(int)) return -1;
    error->code = code;
    error->sys_errno = sys_errno;
    if (error->struct_size >= offsetof(ba_client_error, message) + sizeof(error->message)) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(error->message, sizeof(error->message), format, arguments);
        va_end(arguments);
    }
    return -1;
}

int64_t bac_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int bac_json_quote(char *out, size_t size, const char *text) {
    size_t at = strlen(out);
    if (at + 1 >= size) return -1;
    out[at++] = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        char escaped[8];
        size_t length;
        if (*c == '"' || *c == '\\') length = (size_t)snprintf(escaped, sizeof escaped, "\\%c", *c);
        else if (*c < 0x20) length = (size_t)snprintf(escaped, sizeof escaped, "\\u%04x", *c);
        else escaped[0] = (char)*c, length = 1;
        if (at + length + 2 > size) return -1;
        memcpy(out + at, escaped, length);
        at += length;
    }
    out[at++] = '"';
    out[at] = '\0';
    return 0;
}

/* ---- Connecting ---- */

static const char *default_socket(char *buffer, size_t size) {
    const char *explicit_path = getenv("BA_SOCKET");
    if (explicit_path != NULL && explicit_path[0] != '\0') return explicit_path;
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (runtime != NULL && runtime[0] != '\0') snprintf(buffer, size, "%s/background-assets/basd.sock", runtime);
    else snprintf(buffer, size, "/tmp/background-assets-%u/basd.sock", (unsigned)getuid());
    return buffer;
}

static ba_client *connect_as(const char *bundle_id, const char *socket_path, int probe, ba_client_error *error) {
    if (bundle_id == NULL || bundle_id[0] == '\0' || strlen(bundle_id) > 255) {
        bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "a bundle identifier of 1 to 255 bytes is needed");
        return NULL;
    }
    char fallback[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
    const char *path = socket_path != NULL ? socket_path : default_socket(fallback, sizeof fallback);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(address.sun_path)) {
        bac_fail(error, BA_CLIENT_E_NOT_ACCEPTED, ENAMETOOLONG, "the socket path %s is too long", path);
        return NULL;
    }
    strcpy(address.sun_path, path);
    ba_client *client = calloc(1, sizeof(*client));
    if (client == NULL || (client->bundle_id = strdup(bundle_id)) == NULL) {
        free(client);
        bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
        return NULL;
    }
    client->probe = probe;
    client->timeout_ms = 30000;
    client->next_id = 1;
    client->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client->fd < 0 || connect(client->fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        int failure = errno;
        bac_fail(error, BA_CLIENT_E_NOT_ACCEPTED, failure, "cannot reach basd at %s: %s (is it running? `ba status`)",
            path, strerror(failure));
        ba_client_close(client);
        return NULL;
    }
    /* The hello: a probe is a role of its own, so a basd that does not know it refuses the hello
     * (and marks nothing) rather than taking it for the app. */
    char body[1024] = "{\"type\":\"hello\",\"protocolVersion\":1,\"client\":{\"role\":";
    strcat(body, probe ? "\"probe\"" : "\"app\"");
    strcat(body, ",\"bundleIdentifier\":");
    if (bac_json_quote(body, sizeof body - 64, bundle_id) < 0) {
        bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "the bundle identifier is too long");
        ba_client_close(client);
        return NULL;
    }
    snprintf(body + strlen(body), sizeof body - strlen(body), ",\"pid\":%d}}", (int)getpid());
    bac_json answer;
    int32_t result;
    if (bac_request(client, body, &answer, &result, error) < 0) {
        ba_client_close(client);
        return NULL;
    }
    const char *container =
        bac_json_string(&answer, bac_json_member(&answer, bac_json_member(&answer, result, "welcome"), "appGroupContainer"));
    if (container != NULL && (client->container = strdup(container)) == NULL) {
        bac_json_free(&answer);
        ba_client_close(client);
        bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
        return NULL;
    }
    bac_json_free(&answer);
    return client;
}

ba_client *ba_client_connect(const char *bundle_id, const char *socket_path, ba_client_error *error) {
    return connect_as(bundle_id, socket_path, 0, error);
}

ba_client *ba_client_connect_probe(const char *bundle_id, const char *socket_path, ba_client_error *error) {
    return connect_as(bundle_id, socket_path, 1, error);
}

/* The connection is unusable from here on (basd went away, or sent what cannot be trusted). */
static void disconnect(ba_client *client) {
    if (client->fd >= 0) close(client->fd);
    client->fd = -1;
    client->buffered = 0;
}

void ba_client_close(ba_client *client) {
    if (client == NULL) return;
    disconnect(client);
    while (client->first_event != NULL) {
        bac_event_node *node = client->first_event;
        client->first_event = node->next;
        free(node->event);
        free(node);
    }
    free(client->buffer);
    free(client->bundle_id);
    free(client->container);
    free(client);
}

void ba_client_set_timeout(ba_client *client, int milliseconds) {
    if (client != NULL) client->timeout_ms = milliseconds < 0 ? 0 : milliseconds;
}

const char *ba_client_app_group_container(const ba_client *client) { return client ? client->container : NULL; }

int ba_client_fd(const ba_client *client) { return client ? client->fd : -1; }

size_t ba_client_pending_events(const ba_client *client) { return client ? client->queued : 0; }

/* ---- Frames ---- */

static uint32_t frame_length(const unsigned char *bytes) {
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3];
}

/* A whole frame is buffered: 1; not yet: 0; a length out of bounds: -1 (closed). */
static int have_frame(ba_client *client, ba_client_error *error) {
    if (client->buffered < 4) return 0;
    uint32_t length = frame_length(client->buffer);
    if (length == 0 || length > BA_CLIENT_MAX_FRAME) {
        disconnect(client);
        return bac_fail(error, BA_CLIENT_E_INVALID_FRAME, 0, "basd sent a frame of %u bytes (1 to %u)", length,
            BA_CLIENT_MAX_FRAME);
    }
    return client->buffered - 4 >= length;
}

/* Reads once from the socket into the buffer (grown up to one whole frame and a read). */
static int read_some(ba_client *client, ba_client_error *error) {
    size_t want = 65536;
    if (client->capacity - client->buffered < want) {
        size_t capacity = client->buffered + want;
        if (capacity > 4 + BA_CLIENT_MAX_FRAME + want) {
            disconnect(client);
            return bac_fail(error, BA_CLIENT_E_INVALID_FRAME, 0, "basd sent more than a frame holds");
        }
        unsigned char *grown = realloc(client->buffer, capacity);
        if (grown == NULL) return bac_fail(error, BA_CLIENT_E_NO_MEMORY, ENOMEM, "out of memory");
        client->buffer = grown;
        client->capacity = capacity;
    }
    ssize_t count;
    do count = recv(client->fd, client->buffer + client->buffered, client->capacity - client->buffered, MSG_DONTWAIT);
    while (count < 0 && errno == EINTR);
    if (count > 0) {
        client->buffered += (size_t)count;
        return 1;
    }
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    int failure = count < 0 ? errno : 0;
    disconnect(client);
    if (failure != 0) return bac_fail(error, BA_CLIENT_E_CONNECTION, failure, "the connection to basd broke: %s", strerror(failure));
    return bac_fail(error, BA_CLIENT_E_CONNECTION, ECONNRESET, "basd closed the connection");
}

/* Waits until the socket is readable or `deadline` passes: 1 readable, 0 timeout, -1 error. */
static int wait_readable(ba_client *client, int64_t deadline, ba_client_error *error) {
    for (;;) {
        int timeout = -1;
        if (deadline > 0) {
            int64_t left = deadline - bac_now();
            if (left <= 0) return 0;
            timeout = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd descriptor = {.fd = client->fd, .events = POLLIN};
        int ready = poll(&descriptor, 1, timeout);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR) {
            int failure = errno;
            disconnect(client);
            return bac_fail(error, BA_CLIENT_E_CONNECTION, failure, "poll: %s", strerror(failure));
        }
    }
}

/* The next whole frame, parsed: 1 (into *frame), 0 when none came by `deadline` (with `wait`; at
 * once without), -1 on error. */
static int next_frame(ba_client *client, int wait, int64_t deadline, bac_json *frame, ba_client_error *error) {
    if (client->fd < 0) return bac_fail(error, BA_CLIENT_E_CONNECTION, ENOTCONN, "the connection to basd is closed");
    for (;;) {
        int have = have_frame(client, error);
        if (have < 0) return -1;
        if (have) break;
        int got = read_some(client, error);
        if (got < 0) return -1;
        if (got > 0) continue;
        if (!wait) return 0;
        int readable = wait_readable(client, deadline, error);
        if (readable <= 0) return readable;
    }
    uint32_t length = frame_length(client->buffer);
    int parsed = bac_json_parse(frame, (const char *)client->buffer + 4, length);
    memmove(client->buffer, client->buffer + 4 + length, client->buffered - 4 - length);
    client->buffered -= 4 + (size_t)length;
    if (parsed < 0 || bac_json_type_of(frame, 0) != BAC_JSON_OBJECT) {
        const char *why = parsed < 0 ? frame->failure : "not an object";
        bac_json_free(frame);
        disconnect(client);
        return bac_fail(error, BA_CLIENT_E_INVALID_MESSAGE, 0, "basd sent a frame this client refuses: %s", why);
    }
    return 1;
}

/* ---- Events ---- */

static ba_client_event_kind kind_of(const char *name) {
    static const char *const names[] = {"began", "paused", "progress", "finished", "failed", "removed", "obsolete"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return (ba_client_event_kind)(i + 1);
    return BA_CLIENT_EVENT_OTHER;
}

/* A packEvent object as one allocation: the struct, then its strings. */
static ba_client_event *event_from_json(const bac_json *json, int32_t object) {
    const char *kind = bac_json_string(json, bac_json_member(json, object, "kind"));
    const char *pack = bac_json_string(json, bac_json_member(json, object, "assetPackID"));
    if (kind == NULL || pack == NULL) return NULL;
    const char *waiting = bac_json_string(json, bac_json_member(json, object, "waitingFor"));
    const char *message = bac_json_string(json, bac_json_member(json, object, "message"));
    const char *strings[] = {kind, pack, waiting, message};
    size_t size = sizeof(ba_client_event);
    for (size_t i = 0; i < 4; i++) size += strings[i] ? strlen(strings[i]) + 1 : 0;
    ba_client_event *event = calloc(1, size);
    if (event == NULL) return NULL;
    char *at = (char *)(event + 1);
    const char **fields[] = {&event->kind_name, &event->pack_id, &event->waiting_for, &event->message};
    for (size_t i = 0; i < 4; i++) {
        if (strings[i] == NULL) continue;
        size_t length = strlen(strings[i]) + 1;
        memcpy(at, strings[i], length);
        *fields[i] = at;
        at += length;
    }
    event->struct_size = sizeof(*event);
    event->kind = kind_of(kind);
    int64_t *numbers[] = {&event->version, &event->bytes_present, &event->bytes_total, &event->error_code};
    const char *keys[] = {"version", "bytesPresent", "bytesTotal", "errorCode"};
    for (size_t i = 0; i < 4; i++)
        if (bac_json_integer(json, bac_json_member(json, object, keys[i]), numbers[i]) < 0) *numbers[i] = BA_CLIENT_ABSENT;
    return event;
}

static void enqueue(ba_client *client, ba_client_event *event) {
    /* A pack's queued progress is replaced by its newer one. */
    if (event->kind == BA_CLIENT_EVENT_PROGRESS) {
        for (bac_event_node *node = client->first_event; node != NULL; node = node->next) {
            if (node->event->kind == BA_CLIENT_EVENT_PROGRESS && strcmp(node->event->pack_id, event->pack_id) == 0
                && node->next == NULL) {
                free(node->event);
                node->event = event;
                return;
            }
        }
    }
    bac_event_node *node = malloc(sizeof(*node));
    if (node == NULL) {
        free(event);
        return;
    }
    node->next = NULL;
    node->event = event;
    if (client->last_event) client->last_event->next = node;
    else client->first_event = node;
    client->last_event = node;
    client->queued++;
    if (client->queued > BAC_MAX_QUEUED_EVENTS) free(bac_take_event(client, NULL));
}

ba_client_event *bac_take_event(ba_client *client, const char *pack_id) {
    bac_event_node *previous = NULL;
    for (bac_event_node *node = client->first_event; node != NULL; previous = node, node = node->next) {
        if (pack_id != NULL && strcmp(node->event->pack_id, pack_id) != 0) continue;
        if (previous) previous->next = node->next;
        else client->first_event = node->next;
        if (client->last_event == node) client->last_event = previous;
        client->queued--;
        ba_client_event *event = node->event;
        free(node);
        return event;
    }
    return NULL;
}

/* Keeps what a frame that is not the awaited answer carries: a pack event. */
static void keep(ba_client *client, const bac_json *frame) {
    const char *type = bac_json_string(frame, bac_json_member(frame, 0, "type"));
    if (type == NULL || strcmp(type, "packEvent") != 0) return;
    ba_client_event *event = event_from_json(frame, bac_json_member(frame, 0, "packEvent"));
    if (event != NULL) enqueue(client, event);
}

int bac_receive(ba_client *client, int wait, int64_t deadline, ba_client_error *error) {
    int got = 0;
    for (;;) {
        bac_json frame;
        int read = next_frame(client, wait && !got, deadline, &frame, error);
        if (read < 0) return -1;
        if (read == 0) return got;
        keep(client, &frame);
        bac_json_free(&frame);
        got = 1;
    }
}

int ba_client_follow(ba_client *client, ba_client_error *error) {
    if (client == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no client");
    if (client->following) return 0;
    bac_json answer;
    int32_t result;
    if (bac_request(client, "{\"type\":\"packs\",\"packs\":{\"action\":\"follow\"}}", &answer, &result, error) < 0)
        return -1;
    bac_json_free(&answer);
    client->following = 1;
    return 0;
}

int ba_client_next_event(ba_client *client, ba_client_event **out, ba_client_error *error) {
    return ba_client_wait_event(client, -1, out, error);
}

/* (timeout_ms -1: do not wait.) */
int ba_client_wait_event(ba_client *client, int timeout_ms, ba_client_event **out, ba_client_error *error) {
    if (client == NULL || out == NULL) return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "no client or out");
    *out = bac_take_event(client, NULL);
    if (*out != NULL) return 1;
    int64_t deadline = timeout_ms > 0 ? bac_now() + timeout_ms : 0;
    int got = bac_receive(client, timeout_ms >= 0, deadline, error);
    if (got < 0) return -1;
    *out = bac_take_event(client, NULL);
    if (*out != NULL) return 1;
    /* A frame came that was no event: keep waiting until the deadline. */
    while (got > 0 && timeout_ms >= 0) {
        got = bac_receive(client, 1, deadline, error);
        if (got < 0) return -1;
        if ((*out = bac_take_event(client, NULL)) != NULL) return 1;
    }
    return 0;
}

void ba_client_event_free(ba_client_event *event) { free(event); }

/* ---- Requests ---- */

int bac_request(ba_client *client, const char *body, bac_json *answer, int32_t *result, ba_client_error *error) {
    if (client->fd < 0) return bac_fail(error, BA_CLIENT_E_CONNECTION, ENOTCONN, "the connection to basd is closed");
    uint64_t id = client->next_id++;
    size_t length = strlen(body);
    if (length < 2 || body[0] != '{' || length + 32 > BA_CLIENT_MAX_FRAME)
        return bac_fail(error, BA_CLIENT_E_ARGUMENT, EINVAL, "a request over the frame bound");
    char prefix[40];
    int prefix_length = snprintf(prefix, sizeof prefix, "{\"id\":%llu,", (unsigned long long)id);
    uint32_t frame = (uint32_t)(prefix_length + length - 1);
    unsigned char header[4] = {frame >> 24, frame >> 16, frame >> 8, frame};
    struct iovec parts[] = {{header, 4}, {prefix, (size_t)prefix_length}, {(char *)body + 1, length - 1}};
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = 3};
    size_t left = 4 + (size_t)frame;
    while (left > 0) {
        ssize_t sent = sendmsg(client->fd, &message, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) {
            int failure = errno;
            disconnect(client);
            return bac_fail(error, BA_CLIENT_E_CONNECTION, failure, "the connection to basd broke: %s", strerror(failure));
        }
        left -= (size_t)sent;
        /* Skip what was sent. */
        while (sent > 0 && message.msg_iovlen > 0) {
            if ((size_t)sent >= message.msg_iov->iov_len) {
                sent -= (ssize_t)message.msg_iov->iov_len;
                message.msg_iov++;
                message.msg_iovlen--;
            } else {
                message.msg_iov->iov_base = (char *)message.msg_iov->iov_base + sent;
                message.msg_iov->iov_len -= (size_t)sent;
                sent = 0;
            }
        }
    }
    int64_t deadline = client->timeout_ms > 0 ? bac_now() + client->timeout_ms : 0;
    for (;;) {
        int read = next_frame(client, 1, deadline, answer, error);
        if (read < 0) return -1;
        if (read == 0) return bac_fail(error, BA_CLIENT_E_TIMEOUT, ETIMEDOUT, "basd did not answer within %d ms", client->timeout_ms);
        const char *type = bac_json_string(answer, bac_json_member(answer, 0, "type"));
        int64_t answered;
        if (type != NULL && strcmp(type, "response") == 0
            && bac_json_integer(answer, bac_json_member(answer, 0, "id"), &answered) == 0 && (uint64_t)answered == id) {
            *result = bac_json_member(answer, 0, "result");
            const char *kind = bac_json_string(answer, bac_json_member(answer, *result, "type"));
            if (kind == NULL) {
                bac_json_free(answer);
                return bac_fail(error, BA_CLIENT_E_INVALID_MESSAGE, 0, "basd's answer has no result type");
            }
            if (strcmp(kind, "error") == 0) {
                int64_t code = BA_CLIENT_E_CONNECTION;
                bac_json_integer(answer, bac_json_member(answer, *result, "code"), &code);
                const char *text = bac_json_string(answer, bac_json_member(answer, *result, "message"));
                bac_fail(error, (int)code, 0, "basd error %lld: %s", (long long)code, text ? text : "");
                bac_json_free(answer);
                return -1;
            }
            return 0;
        }
        keep(client, answer);
        bac_json_free(answer);
    }
}

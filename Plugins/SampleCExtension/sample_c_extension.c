/*
 * SampleCExtension: the C sample extension. It does through the C ABI exactly what
 * Plugins/SampleSwiftExtension does in Swift (the catalog scenario of Apple's WWDC22 and WWDC23
 * Background Assets talks), with the same log lines:
 *
 * - downloads_for_request: reads the app's JSON manifest (the format of
 *   Examples/SampleApp/manifest.template.json) and returns its assets, essential ones only for
 *   install and update requests.
 * - download_finished: under the app group's exclusive control, moves the file into the app group
 *   container ($BA_APP_GROUP_CONTAINER, set by the runner) as Assets/<identifier>. For the catalog
 *   (identifier "catalog") it then reads the catalog there and schedules every asset it lists that
 *   is neither in Assets/ nor already scheduled, with a relative URL resolved against the catalog
 *   download's own URL (RFC 3986, as Foundation's URL(string:relativeTo:) does).
 * - download_failed: logs the error; an essential download is scheduled again with the essential
 *   flag cleared (the app still gets it, in the background).
 * - download_received_challenge: answers with $BA_SAMPLE_USER / $BA_SAMPLE_PASSWORD when both are set.
 *
 * It carries its own small JSON parser: bounded (16 MiB of input, 64 levels of nesting), strict
 * (RFC 8259 syntax, valid UTF-8, paired surrogates) and allocation-free apart from the file
 * buffer. A document is parsed twice: a first pass validates all of it (a document with any
 * error gives no downloads, as in Swift, where JSONDecoder fails as a whole); a second pass
 * decodes strings in place and hands out the assets one by one.
 */
#define _POSIX_C_SOURCE 200809L

#include "ba_extension.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SAMPLE_NAME "SampleCExtension"
#define JSON_MAX_BYTES ((size_t)16 * 1024 * 1024)
#define CATALOG_IDENTIFIER "catalog"
#define JSON_MAX_DEPTH 64

#if defined(__GNUC__) || defined(__clang__)
#define SAMPLE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SAMPLE_PRINTF(f, a)
#endif

/* ---- Host helpers ------------------------------------------------------------------------ */

/* True when the host table is long enough to hold `field` and the function is there. */
#define HOST_HAS(host, field)                                                                   \
    ((host) != NULL && (host)->struct_size >= offsetof(ba_host_api, field) + sizeof((host)->field) \
     && (host)->field != NULL)

/* True when a host-written struct is long enough to hold `field`. */
#define COVERS(ptr, type, field) \
    ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/* Longest string put into one log line, so a hostile length cannot blow up the message. */
#define LOG_STRING_MAX ((size_t)65536)

static int log_length(const char *p, size_t n)
{
    if (p == NULL) return 0;
    return (int)(n > LOG_STRING_MAX ? LOG_STRING_MAX : n);
}

/* For "%.*s" with a length-delimited string that may be NULL. */
#define SV(p, n) log_length((p), (n)), ((p) != NULL ? (p) : "")

static void host_log(const ba_host_api *host, ba_log_level level, const char *format, ...) SAMPLE_PRINTF(3, 4);

static void host_log(const ba_host_api *host, ba_log_level level, const char *format, ...)
{
    if (!HOST_HAS(host, log)) return;
    char small[512];
    va_list args;
    va_start(args, format);
    int needed = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (needed < 0) return;
    if ((size_t)needed < sizeof small) {
        host->log(level, small, (size_t)needed);
        return;
    }
    char *large = malloc((size_t)needed + 1);
    if (large == NULL) {
        host->log(level, small, sizeof small - 1); /* truncated, better than nothing */
        return;
    }
    va_start(args, format);
    int written = vsnprintf(large, (size_t)needed + 1, format, args);
    va_end(args);
    if (written >= 0) host->log(level, large, (size_t)(written < needed ? written : needed));
    free(large);
}

/* The host's reason for the last BA_FAILED on this thread, never NULL. */
static const char *host_last_error(const ba_host_api *host, size_t *length_out)
{
    *length_out = 0;
    if (!HOST_HAS(host, last_error_message)) return "";
    size_t length = 0;
    const char *message = host->last_error_message(&length);
    if (message == NULL) return "";
    *length_out = length;
    return message;
}

/* ---- Reading a JSON file ----------------------------------------------------------------- */

/* Reads the whole file at `path` (length-delimited) into a new buffer. On failure returns NULL
 * and writes the reason to `why`. Refuses files larger than JSON_MAX_BYTES. */
static char *read_json_file(const char *path, size_t path_length, size_t *length_out, char *why, size_t why_size)
{
    *length_out = 0;
    if (path == NULL || path_length == 0) {
        snprintf(why, why_size, "no path");
        return NULL;
    }
    if (memchr(path, '\0', path_length) != NULL || path_length > 65536) {
        snprintf(why, why_size, "not a valid path");
        return NULL;
    }
    char *cpath = malloc(path_length + 1);
    if (cpath == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    memcpy(cpath, path, path_length);
    cpath[path_length] = '\0';
    FILE *file = fopen(cpath, "rb");
    free(cpath);
    if (file == NULL) {
        snprintf(why, why_size, "%s", strerror(errno));
        return NULL;
    }

    size_t capacity = 0, length = 0;
    char *buffer = NULL;
    for (;;) {
        if (length == capacity) {
            if (capacity > JSON_MAX_BYTES) {
                snprintf(why, why_size, "the file is larger than %zu bytes", JSON_MAX_BYTES);
                goto fail;
            }
            /* Grow up to JSON_MAX_BYTES + 1: one byte more than allowed tells "too large". */
            size_t next = capacity == 0 ? 65536 : capacity * 2;
            if (next > JSON_MAX_BYTES + 1) next = JSON_MAX_BYTES + 1;
            char *grown = realloc(buffer, next);
            if (grown == NULL) {
                snprintf(why, why_size, "out of memory");
                goto fail;
            }
            buffer = grown;
            capacity = next;
        }
        size_t got = fread(buffer + length, 1, capacity - length, file);
        length += got;
        if (got == 0) break;
    }
    if (ferror(file)) {
        snprintf(why, why_size, "read error: %s", strerror(errno));
        goto fail;
    }
    if (length > JSON_MAX_BYTES) {
        snprintf(why, why_size, "the file is larger than %zu bytes", JSON_MAX_BYTES);
        goto fail;
    }
    fclose(file);
    *length_out = length;
    return buffer;

fail:
    free(buffer);
    fclose(file);
    return NULL;
}

/* ---- A small JSON parser ----------------------------------------------------------------- */

typedef struct {
    char *base;     /* start of the document */
    char *cur;      /* next byte to read */
    char *end;      /* one past the last byte */
    int failed;
    char error[200]; /* the first error */
} jparser;

static int jfail(jparser *jp, const char *format, ...) SAMPLE_PRINTF(2, 3);

/* Records the first error with its byte offset; returns 0 so callers can `return jfail(...)`. */
static int jfail(jparser *jp, const char *format, ...)
{
    if (jp->failed) return 0;
    jp->failed = 1;
    char reason[160];
    va_list args;
    va_start(args, format);
    vsnprintf(reason, sizeof reason, format, args);
    va_end(args);
    snprintf(jp->error, sizeof jp->error, "%s at byte %zu", reason, (size_t)(jp->cur - jp->base));
    return 0;
}

static void jws(jparser *jp)
{
    while (jp->cur < jp->end && (*jp->cur == ' ' || *jp->cur == '\t' || *jp->cur == '\n' || *jp->cur == '\r')) jp->cur++;
}

/* The next byte, or -1 at the end. */
static int jpeek(const jparser *jp)
{
    return jp->cur < jp->end ? (unsigned char)*jp->cur : -1;
}

static int jliteral(jparser *jp, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(jp->end - jp->cur) < n || memcmp(jp->cur, word, n) != 0) return jfail(jp, "invalid literal");
    jp->cur += n;
    return 1;
}

static int jhex4(jparser *jp, uint32_t *out)
{
    if (jp->end - jp->cur < 4) return jfail(jp, "truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)jp->cur[i];
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else return jfail(jp, "invalid \\u escape");
        value = value * 16 + (uint32_t)digit;
    }
    jp->cur += 4;
    *out = value;
    return 1;
}

/* Length (2..4) of the valid UTF-8 sequence at p, or 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) { n = 3; lo = 0xA0; }
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
    else if (c == 0xED) { n = 3; hi = 0x9F; }
    else if (c == 0xF0) { n = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) { n = 4; hi = 0x8F; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return n;
}

/*
 * Parses the string at jp->cur (which must be '"'). The decoded bytes go to dst (when not NULL),
 * at most `capacity` of them; *length_out gets the full decoded length. dst may be the first
 * byte after the opening quote (decoding in place): the output never overtakes the input.
 */
static int jstring(jparser *jp, char *dst, size_t capacity, size_t *length_out)
{
    if (jpeek(jp) != '"') return jfail(jp, jpeek(jp) < 0 ? "unexpected end of the document" : "expected a string");
    jp->cur++;
    size_t n = 0;
#define EMIT(byte)                                          \
    do {                                                    \
        if (dst != NULL && n < capacity) dst[n] = (char)(byte); \
        n++;                                                \
    } while (0)
    for (;;) {
        if (jp->cur >= jp->end) return jfail(jp, "unterminated string");
        unsigned char c = (unsigned char)*jp->cur;
        if (c == '"') {
            jp->cur++;
            break;
        }
        if (c < 0x20) return jfail(jp, "control character in a string");
        if (c == '\\') {
            if (jp->end - jp->cur < 2) return jfail(jp, "unterminated string");
            char escape = jp->cur[1];
            jp->cur += 2;
            switch (escape) {
            case '"': EMIT('"'); break;
            case '\\': EMIT('\\'); break;
            case '/': EMIT('/'); break;
            case 'b': EMIT('\b'); break;
            case 'f': EMIT('\f'); break;
            case 'n': EMIT('\n'); break;
            case 'r': EMIT('\r'); break;
            case 't': EMIT('\t'); break;
            case 'u': {
                uint32_t cp;
                if (!jhex4(jp, &cp)) return 0;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t low;
                    if (jp->end - jp->cur < 2 || jp->cur[0] != '\\' || jp->cur[1] != 'u')
                        return jfail(jp, "unpaired surrogate in a \\u escape");
                    jp->cur += 2;
                    if (!jhex4(jp, &low)) return 0;
                    if (low < 0xDC00 || low > 0xDFFF) return jfail(jp, "unpaired surrogate in a \\u escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return jfail(jp, "unpaired surrogate in a \\u escape");
                }
                if (cp < 0x80) {
                    EMIT(cp);
                } else if (cp < 0x800) {
                    EMIT(0xC0 | (cp >> 6));
                    EMIT(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    EMIT(0xE0 | (cp >> 12));
                    EMIT(0x80 | ((cp >> 6) & 0x3F));
                    EMIT(0x80 | (cp & 0x3F));
                } else {
                    EMIT(0xF0 | (cp >> 18));
                    EMIT(0x80 | ((cp >> 12) & 0x3F));
                    EMIT(0x80 | ((cp >> 6) & 0x3F));
                    EMIT(0x80 | (cp & 0x3F));
                }
                break;
            }
            default:
                jp->cur -= 2;
                return jfail(jp, "invalid escape in a string");
            }
            continue;
        }
        if (c < 0x80) {
            EMIT(c);
            jp->cur++;
            continue;
        }
        size_t k = utf8_sequence((const unsigned char *)jp->cur, (const unsigned char *)jp->end);
        if (k == 0) return jfail(jp, "invalid UTF-8 in a string");
        for (size_t i = 0; i < k; i++) EMIT((unsigned char)jp->cur[i]);
        jp->cur += k;
    }
#undef EMIT
    if (length_out != NULL) *length_out = n;
    return 1;
}

/*
 * Parses a JSON number. *is_int64 tells whether its exact value is an integer that fits in
 * int64_t (so 4096, 4096.0 and 4.096e3 are, 4096.5 and 1e19 are not); *value is then that value.
 */
static int jnumber(jparser *jp, int *is_int64, int64_t *value)
{
    *is_int64 = 0;
    *value = 0;
    int negative = 0;
    uint64_t mantissa = 0; /* at most 19 significant digits */
    int digits = 0;        /* significant digits in mantissa */
    int lost = 0;          /* a nonzero digit did not fit in mantissa */
    int64_t exponent = 0;  /* value = mantissa * 10^exponent (ignoring lost digits) */

    if (jpeek(jp) == '-') {
        negative = 1;
        jp->cur++;
    }
    int c = jpeek(jp);
    if (c == '0') {
        jp->cur++;
    } else if (c >= '1' && c <= '9') {
        while ((c = jpeek(jp)) >= '0' && c <= '9') {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(c - '0');
                digits++;
            } else {
                if (c != '0') lost = 1;
                exponent++; /* at most the 16 MiB of input */
            }
            jp->cur++;
        }
    } else {
        return jfail(jp, "invalid number");
    }
    if (jpeek(jp) == '.') {
        jp->cur++;
        c = jpeek(jp);
        if (!(c >= '0' && c <= '9')) return jfail(jp, "invalid number");
        while ((c = jpeek(jp)) >= '0' && c <= '9') {
            if (mantissa == 0 && c == '0') {
                exponent--;
            } else if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(c - '0');
                digits++;
                exponent--;
            } else if (c != '0') {
                lost = 1;
            }
            jp->cur++;
        }
    }
    c = jpeek(jp);
    if (c == 'e' || c == 'E') {
        jp->cur++;
        int exponent_negative = 0;
        c = jpeek(jp);
        if (c == '+' || c == '-') {
            exponent_negative = c == '-';
            jp->cur++;
        }
        c = jpeek(jp);
        if (!(c >= '0' && c <= '9')) return jfail(jp, "invalid number");
        int64_t e = 0; /* clamped far beyond any digit count, so the sign of the sum stays right */
        while ((c = jpeek(jp)) >= '0' && c <= '9') {
            if (e < 1000000000) e = e * 10 + (c - '0');
            jp->cur++;
        }
        exponent += exponent_negative ? -e : e;
    }

    if (lost) return 1; /* more than 19 significant digits: a fraction or beyond int64 */
    if (mantissa == 0) {
        *is_int64 = 1;
        return 1;
    }
    while (exponent < 0 && mantissa % 10 == 0) {
        mantissa /= 10;
        exponent++;
    }
    if (exponent < 0) return 1; /* a fraction */
    while (exponent > 0) {
        if (mantissa > UINT64_MAX / 10) return 1;
        mantissa *= 10;
        exponent--;
    }
    if (!negative && mantissa <= (uint64_t)INT64_MAX) {
        *value = (int64_t)mantissa;
        *is_int64 = 1;
    } else if (negative && mantissa <= (uint64_t)INT64_MAX + 1) {
        *value = mantissa == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mantissa;
        *is_int64 = 1;
    }
    return 1;
}

/* Skips one value of any type; `depth` is the nesting level the value sits at. */
static int jskip(jparser *jp, int depth)
{
    jws(jp);
    int c = jpeek(jp);
    if (c == '"') return jstring(jp, NULL, 0, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        if (depth >= JSON_MAX_DEPTH) return jfail(jp, "nested more than %d levels deep", JSON_MAX_DEPTH);
        jp->cur++;
        jws(jp);
        if (jpeek(jp) == close) {
            jp->cur++;
            return 1;
        }
        for (;;) {
            if (c == '{') {
                jws(jp);
                if (!jstring(jp, NULL, 0, NULL)) return 0;
                jws(jp);
                if (jpeek(jp) != ':') return jfail(jp, "expected ':'");
                jp->cur++;
            }
            if (!jskip(jp, depth + 1)) return 0;
            jws(jp);
            int next = jpeek(jp);
            if (next == ',') {
                jp->cur++;
                continue;
            }
            if (next == close) {
                jp->cur++;
                return 1;
            }
            return jfail(jp, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (c == 't') return jliteral(jp, "true");
    if (c == 'f') return jliteral(jp, "false");
    if (c == 'n') return jliteral(jp, "null");
    if (c == '-' || (c >= '0' && c <= '9')) {
        int is_int64;
        int64_t value;
        return jnumber(jp, &is_int64, &value);
    }
    return jfail(jp, c < 0 ? "unexpected end of the document" : "unexpected character");
}

/*
 * The next item of an object or array whose opening bracket was consumed: 1 with jp->cur at the
 * item, 0 after the closing `close`, -1 on error. *first must start at 1.
 */
static int jnext(jparser *jp, int *first, char close)
{
    jws(jp);
    int c = jpeek(jp);
    if (*first) {
        *first = 0;
        if (c == close) {
            jp->cur++;
            return 0;
        }
    } else if (c == close) {
        jp->cur++;
        return 0;
    } else if (c == ',') {
        jp->cur++;
        jws(jp);
    } else {
        jfail(jp, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
        return -1;
    }
    return 1;
}

/*
 * Object members, after the '{' was consumed: returns 1 with the member's key (decoded into
 * key[0..key_capacity), full length in *key_length) and jp->cur at its value, 0 at the closing
 * '}', -1 on error. *first must start at 1.
 */
static int jmember(jparser *jp, int *first, char *key, size_t key_capacity, size_t *key_length)
{
    int next = jnext(jp, first, '}');
    if (next != 1) return next;
    if (!jstring(jp, key, key_capacity, key_length)) return -1;
    jws(jp);
    if (jpeek(jp) != ':') {
        jfail(jp, "expected ':'");
        return -1;
    }
    jp->cur++;
    jws(jp);
    return 1;
}

/* Array elements, after the '[' was consumed: 1 with jp->cur at the element, 0 at ']', -1 on error. */
static int jelement(jparser *jp, int *first) { return jnext(jp, first, ']'); }

static int key_is(const char *key, size_t key_length, const char *name)
{
    size_t n = strlen(name);
    return key_length == n && memcmp(key, name, n) == 0;
}

/* A string member that may be null or absent. With `decode`, the string is decoded in place
 * and *out points at it; without, it is only validated. */
static int jopt_string(jparser *jp, int decode, const char *field, const char **out, size_t *length, int *present)
{
    int c = jpeek(jp);
    if (c == 'n') {
        *present = 0;
        *out = NULL;
        *length = 0;
        return jliteral(jp, "null");
    }
    if (c != '"') return jfail(jp, "%s is not a string", field);
    char *start = jp->cur + 1;
    if (!jstring(jp, decode ? start : NULL, decode ? SIZE_MAX : 0, length)) return 0;
    *out = decode ? start : NULL;
    if (!decode) *length = 0;
    *present = 1;
    return 1;
}

static int jopt_int(jparser *jp, const char *field, int64_t *out, int *present)
{
    int c = jpeek(jp);
    if (c == 'n') {
        *present = 0;
        return jliteral(jp, "null");
    }
    if (c != '-' && !(c >= '0' && c <= '9')) return jfail(jp, "%s is not a number", field);
    int is_int64;
    if (!jnumber(jp, &is_int64, out)) return 0;
    if (!is_int64) return jfail(jp, "%s is not an integer that fits in 64 bits", field);
    *present = 1;
    return 1;
}

static int jopt_bool(jparser *jp, const char *field, int *out, int *present)
{
    int c = jpeek(jp);
    if (c == 'n') {
        *present = 0;
        return jliteral(jp, "null");
    }
    if (c == 't') {
        *out = 1;
        *present = 1;
        return jliteral(jp, "true");
    }
    if (c == 'f') {
        *out = 0;
        *present = 1;
        return jliteral(jp, "false");
    }
    return jfail(jp, "%s is not a boolean", field);
}

/* ---- Manifests and catalogs -------------------------------------------------------------- */

/* Both are {"assets": [asset, ...]}; a manifest also names its "applicationGroupIdentifier", a
 * catalog its "title" (ignored here). */

typedef struct {
    const char *identifier;
    size_t identifier_length;
    int has_identifier;
    const char *url;
    size_t url_length;
    int has_url;
    int64_t file_size;
    int has_file_size;
    int64_t priority;
    int has_priority;
    int essential;
    int has_essential;
    const char *sha256;
    size_t sha256_length;
    int has_sha256;
} manifest_asset;

#define KEY_CAPACITY 32

/* Parses one asset object (jp->cur at its '{'); at nesting level 3 (document, assets, asset). */
static int parse_asset(jparser *jp, int decode, size_t index, manifest_asset *asset)
{
    memset(asset, 0, sizeof *asset);
    if (jpeek(jp) != '{') return jfail(jp, "asset %zu is not an object", index);
    jp->cur++;
    int first = 1, r;
    char key[KEY_CAPACITY];
    size_t key_length;
    while ((r = jmember(jp, &first, key, sizeof key, &key_length)) == 1) {
        int ok;
        if (key_is(key, key_length, "identifier"))
            ok = jopt_string(jp, decode, "identifier", &asset->identifier, &asset->identifier_length, &asset->has_identifier);
        else if (key_is(key, key_length, "url"))
            ok = jopt_string(jp, decode, "url", &asset->url, &asset->url_length, &asset->has_url);
        else if (key_is(key, key_length, "fileSize"))
            ok = jopt_int(jp, "fileSize", &asset->file_size, &asset->has_file_size);
        else if (key_is(key, key_length, "essential"))
            ok = jopt_bool(jp, "essential", &asset->essential, &asset->has_essential);
        else if (key_is(key, key_length, "priority"))
            ok = jopt_int(jp, "priority", &asset->priority, &asset->has_priority);
        else if (key_is(key, key_length, "sha256"))
            ok = jopt_string(jp, decode, "sha256", &asset->sha256, &asset->sha256_length, &asset->has_sha256);
        else
            ok = jskip(jp, 3);
        if (!ok) return 0;
    }
    return r == 0;
}

/* What the validating pass found: where the (last) values of the two top-level keys are. */
typedef struct {
    char *group_at;  /* the applicationGroupIdentifier string, or NULL when absent or null */
    char *assets_at; /* the '[' of the assets array */
    size_t asset_count;
} document_layout;

/* First pass: validates the whole document without changing it. */
static int validate_document(jparser *jp, document_layout *layout)
{
    memset(layout, 0, sizeof *layout);
    /* Skip a UTF-8 byte-order mark, as Foundation does. */
    if (jp->end - jp->cur >= 3 && memcmp(jp->cur, "\xEF\xBB\xBF", 3) == 0) jp->cur += 3;
    jws(jp);
    if (jpeek(jp) != '{')
        return jfail(jp, jpeek(jp) < 0 ? "the document is empty" : "the document is not a JSON object");
    jp->cur++;
    int first = 1, r;
    char key[KEY_CAPACITY];
    size_t key_length;
    while ((r = jmember(jp, &first, key, sizeof key, &key_length)) == 1) {
        if (key_is(key, key_length, "applicationGroupIdentifier")) {
            char *at = jp->cur;
            const char *ignored;
            size_t ignored_length;
            int present;
            if (!jopt_string(jp, 0, "applicationGroupIdentifier", &ignored, &ignored_length, &present)) return 0;
            layout->group_at = present ? at : NULL;
        } else if (key_is(key, key_length, "assets")) {
            if (jpeek(jp) != '[') return jfail(jp, "assets is not an array");
            layout->assets_at = jp->cur;
            layout->asset_count = 0;
            jp->cur++;
            int first_asset = 1, e;
            while ((e = jelement(jp, &first_asset)) == 1) {
                manifest_asset asset;
                if (!parse_asset(jp, 0, layout->asset_count, &asset)) return 0;
                layout->asset_count++;
            }
            if (e < 0) return 0;
        } else if (!jskip(jp, 1)) {
            return 0;
        }
    }
    if (r < 0) return 0;
    jws(jp);
    if (jp->cur != jp->end) return jfail(jp, "unexpected data after the document");
    if (layout->assets_at == NULL) return jfail(jp, "there is no assets array");
    return 1;
}

/* Reads and validates the JSON document at `path`; NULL (after logging "cannot read the `what`
 * PATH: REASON") on failure. The caller frees the buffer, which `jp` and `layout` point into. */
static char *load_document(const ba_host_api *host, const char *what, const char *path, size_t path_length,
                           jparser *jp, document_layout *layout)
{
    char why[200];
    size_t length;
    char *text = read_json_file(path, path_length, &length, why, sizeof why);
    if (text == NULL) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot read the %s %.*s: %s", what, SV(path, path_length), why);
        return NULL;
    }
    *jp = (jparser){.base = text, .cur = text, .end = text + length};
    if (!validate_document(jp, layout)) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot read the %s %.*s: %s", what, SV(path, path_length),
                 jp->error);
        free(text);
        return NULL;
    }
    jp->cur = layout->assets_at + 1;
    return text;
}

/* Second pass over a validated document: the next asset (strings decoded in place), 1 while
 * there is one, 0 at the end. `*first` must start at 1, and jp->cur at the assets array
 * (load_document leaves it there). */
static int next_asset(jparser *jp, int *first, size_t index, manifest_asset *asset)
{
    if (jelement(jp, first) != 1) return 0;
    return parse_asset(jp, 1, index, asset);
}

static void sample_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    if (!COVERS(request, ba_content_request_info, restricted_essential_download_size_remaining)) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": no request information");
        return;
    }
    ba_content_request kind = request->request;
    if (kind != BA_CONTENT_REQUEST_INSTALL && kind != BA_CONTENT_REQUEST_UPDATE && kind != BA_CONTENT_REQUEST_PERIODIC) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": unknown content request %d", (int)kind);
        return;
    }
    const char *path = request->manifest_path;
    size_t path_length = path != NULL ? request->manifest_path_length : 0;
    jparser jp;
    document_layout layout;
    char *text = load_document(host, "manifest", path, path_length, &jp, &layout);
    if (text == NULL) return;

    const char *group = NULL;
    size_t group_length = 0;
    if (layout.group_at != NULL) {
        int present;
        jp.cur = layout.group_at;
        if (!jopt_string(&jp, 1, "applicationGroupIdentifier", &group, &group_length, &present) || !present) {
            group = NULL;
            group_length = 0;
        }
        jp.cur = layout.assets_at + 1;
    }

    size_t returned = 0, index = 0;
    int first = 1;
    manifest_asset asset;
    for (; next_asset(&jp, &first, index, &asset); index++) {
        if (!asset.has_identifier || !asset.has_url || asset.url_length == 0) {
            host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": asset %zu has no identifier or url; skipped", index);
            continue;
        }
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .flags = (asset.has_essential && asset.essential && kind != BA_CONTENT_REQUEST_PERIODIC) ? BA_DOWNLOAD_FLAG_ESSENTIAL : 0u,
            .identifier = asset.identifier_length > 0 ? asset.identifier : NULL,
            .identifier_length = asset.identifier_length,
            .url = asset.url,
            .url_length = asset.url_length,
            .application_group_identifier = group_length > 0 ? group : NULL,
            .application_group_identifier_length = group_length,
            .file_size = asset.has_file_size ? asset.file_size : 0,
            .priority = asset.has_priority ? asset.priority : BA_PRIORITY_DEFAULT,
            .sha256_hex = asset.has_sha256 && asset.sha256_length > 0 ? asset.sha256 : NULL,
            .sha256_hex_length = asset.has_sha256 ? asset.sha256_length : 0,
        };
        returned++;
        if (HOST_HAS(host, add_download)) {
            int32_t code = 0;
            if (host->add_download(&download, &code) != BA_OK) {
                size_t message_length;
                const char *message = host_last_error(host, &message_length);
                host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": download %.*s was refused: %.*s (code %d)",
                         SV(download.identifier, download.identifier_length), SV(message, message_length), (int)code);
            }
        }
    }
    if (jp.failed) /* cannot happen after the first pass; never add half a manifest silently */
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": internal error re-reading the manifest: %s", jp.error);
    free(text);

    char left[32] = "unrestricted", essential_left[32] = "unrestricted";
    if (request->restricted_download_size_remaining >= 0)
        snprintf(left, sizeof left, "%lld", (long long)request->restricted_download_size_remaining);
    if (request->restricted_essential_download_size_remaining >= 0)
        snprintf(essential_left, sizeof essential_left, "%lld",
                 (long long)request->restricted_essential_download_size_remaining);
    host_log(host, BA_LOG_INFO,
             SAMPLE_NAME ": returned %zu downloads for request %d (allowance left: %s, essential: %s)", returned,
             (int)kind, left, essential_left);
}

/* ---- Paths and URLs ---------------------------------------------------------------------- */

/* A new NUL-terminated copy of a length-delimited string, or NULL when out of memory. */
static char *copy_string(const char *p, size_t length)
{
    char *copy = malloc(length + 1);
    if (copy == NULL) return NULL;
    if (length > 0) memcpy(copy, p, length);
    copy[length] = '\0';
    return copy;
}

/* A new NUL-terminated string: `a` + "/" + `b` (both length-delimited), or NULL when out of memory. */
static char *join_path(const char *a, size_t a_length, const char *b, size_t b_length)
{
    if (a_length > 65536 || b_length > 65536) return NULL;
    char *path = malloc(a_length + 1 + b_length + 1);
    if (path == NULL) return NULL;
    memcpy(path, a, a_length);
    path[a_length] = '/';
    if (b_length > 0) memcpy(path + a_length + 1, b, b_length);
    path[a_length + 1 + b_length] = '\0';
    return path;
}

/* The app group container of `group`: $BA_APP_GROUP_CONTAINER when its last path component is
 * the group identifier (containers are .../groups/<group identifier>), else NULL. Like
 * FileManager.containerURL(forSecurityApplicationGroupIdentifier:) in an extension.
 * *length_out is the length without trailing slashes. */
static const char *container_for_group(const char *group, size_t group_length, size_t *length_out)
{
    const char *container = getenv("BA_APP_GROUP_CONTAINER");
    if (container == NULL || group == NULL || group_length == 0) return NULL;
    size_t length = strlen(container);
    while (length > 1 && container[length - 1] == '/') length--;
    size_t start = length;
    while (start > 0 && container[start - 1] != '/') start--;
    if (length - start != group_length || memcmp(container + start, group, group_length) != 0) return NULL;
    *length_out = length;
    return container;
}

/* Whether an identifier can name a file in Assets/ (the host's rules forbid these anyway). */
static int is_file_name(const char *identifier, size_t length)
{
    if (identifier == NULL || length == 0) return 0;
    if ((length == 1 && identifier[0] == '.') || (length == 2 && memcmp(identifier, "..", 2) == 0)) return 0;
    return memchr(identifier, '/', length) == NULL && memchr(identifier, '\0', length) == NULL;
}

/* The parts of a URL reference (RFC 3986 section 3); absent parts have a NULL pointer. */
typedef struct {
    const char *scheme, *authority, *path, *query, *fragment;
    size_t scheme_length, authority_length, path_length, query_length, fragment_length;
} url_parts;

static void split_url(const char *url, size_t length, url_parts *parts)
{
    memset(parts, 0, sizeof *parts);
    const char *end = url + length, *p = url;
    /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ':' */
    const char *q = p;
    if (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))) {
        while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '+'
                           || *q == '-' || *q == '.'))
            q++;
        if (q < end && *q == ':') {
            parts->scheme = p;
            parts->scheme_length = (size_t)(q - p);
            p = q + 1;
        }
    }
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
        p += 2;
        parts->authority = p;
        while (p < end && *p != '/' && *p != '?' && *p != '#') p++;
        parts->authority_length = (size_t)(p - parts->authority);
    }
    parts->path = p;
    while (p < end && *p != '?' && *p != '#') p++;
    parts->path_length = (size_t)(p - parts->path);
    if (p < end && *p == '?') {
        parts->query = ++p;
        while (p < end && *p != '#') p++;
        parts->query_length = (size_t)(p - parts->query);
    }
    if (p < end && *p == '#') {
        parts->fragment = ++p;
        parts->fragment_length = (size_t)(end - p);
    }
}

static int starts_with(const char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(p, prefix, k) == 0;
}

/* RFC 3986 section 5.2.4: writes `path` without its "." and ".." segments to `out` (which has
 * room for `length` bytes: the result is never longer); returns the new length. */
static size_t remove_dot_segments(const char *path, size_t length, char *out)
{
    size_t i = 0, o = 0;
    while (i < length) {
        const char *p = path + i;
        size_t n = length - i;
        if (starts_with(p, n, "../")) {
            i += 3;
        } else if (starts_with(p, n, "./")) {
            i += 2;
        } else if (starts_with(p, n, "/./")) {
            i += 2; /* leaves "/" */
        } else if (n == 2 && starts_with(p, n, "/.")) {
            out[o++] = '/';
            i += 2;
        } else if (starts_with(p, n, "/../") || (n == 3 && starts_with(p, n, "/.."))) {
            while (o > 0 && out[o - 1] != '/') o--; /* drop the last output segment */
            if (o > 0) o--;
            if (n == 3) {
                out[o++] = '/';
                i += 3;
            } else {
                i += 3; /* leaves "/" */
            }
        } else if ((n == 1 && p[0] == '.') || (n == 2 && starts_with(p, n, ".."))) {
            i = length;
        } else {
            size_t k = p[0] == '/' ? 1 : 0;
            while (k < n && p[k] != '/') k++;
            memcpy(out + o, p, k);
            o += k;
            i += k;
        }
    }
    return o;
}

/* RFC 3986 section 5.2.2: `reference` resolved against the absolute URL `base`, as a new
 * NUL-terminated string; NULL when `base` has no scheme (and the reference none either) or out of
 * memory. */
static char *resolve_url(const char *base, size_t base_length, const char *reference, size_t reference_length)
{
    url_parts b, r, t;
    split_url(base != NULL ? base : "", base != NULL ? base_length : 0, &b);
    split_url(reference, reference_length, &r);
    if (r.scheme == NULL && b.scheme == NULL) return NULL;

    /* The merged path before removing dot segments is at most base path + reference path + 1. */
    char *merged = malloc(b.path_length + r.path_length + 2);
    char *path = malloc(b.path_length + r.path_length + 2);
    if (merged == NULL || path == NULL) {
        free(merged);
        free(path);
        return NULL;
    }
    const char *from = r.path;
    size_t from_length = r.path_length;
    t = r;
    if (r.scheme == NULL) {
        t.scheme = b.scheme;
        t.scheme_length = b.scheme_length;
        if (r.authority == NULL) {
            t.authority = b.authority;
            t.authority_length = b.authority_length;
            if (r.path_length == 0) {
                from = b.path;
                from_length = b.path_length;
                if (r.query == NULL) {
                    t.query = b.query;
                    t.query_length = b.query_length;
                }
            } else if (r.path[0] != '/') {
                size_t keep = 0; /* the base path up to and including its last '/' */
                for (size_t k = 0; k < b.path_length; k++)
                    if (b.path[k] == '/') keep = k + 1;
                size_t m = 0;
                if (b.authority != NULL && b.path_length == 0) merged[m++] = '/';
                memcpy(merged + m, b.path, keep);
                m += keep;
                memcpy(merged + m, r.path, r.path_length);
                m += r.path_length;
                from = merged;
                from_length = m;
            }
        }
    }
    size_t path_length = remove_dot_segments(from, from_length, path);

    size_t total = t.scheme_length + 1 + (t.authority != NULL ? 2 + t.authority_length : 0) + path_length
                   + (t.query != NULL ? 1 + t.query_length : 0) + (t.fragment != NULL ? 1 + t.fragment_length : 0);
    char *url = malloc(total + 1);
    if (url != NULL) {
        size_t n = 0;
#define APPEND(pointer, count)                                  \
    do {                                                        \
        if ((count) > 0) memcpy(url + n, (pointer), (count));  \
        n += (count);                                           \
    } while (0)
        APPEND(t.scheme, t.scheme_length);
        APPEND(":", 1);
        if (t.authority != NULL) {
            APPEND("//", 2);
            APPEND(t.authority, t.authority_length);
        }
        APPEND(path, path_length);
        if (t.query != NULL) {
            APPEND("?", 1);
            APPEND(t.query, t.query_length);
        }
        if (t.fragment != NULL) {
            APPEND("#", 1);
            APPEND(t.fragment, t.fragment_length);
        }
#undef APPEND
        url[n] = '\0';
    }
    free(merged);
    free(path);
    return url;
}

/* ---- The other entry points -------------------------------------------------------------- */

/* For current_downloads: sets *found when a download has the identifier looked for. */
typedef struct {
    const char *identifier;
    size_t identifier_length;
    int found;
} scheduled_search;

static void find_scheduled(void *user_data, const ba_download *download)
{
    scheduled_search *search = user_data;
    if (COVERS(download, ba_download, identifier_length) && download->identifier != NULL
        && download->identifier_length == search->identifier_length
        && memcmp(download->identifier, search->identifier, search->identifier_length) == 0)
        search->found = 1;
}

static int is_scheduled(const ba_host_api *host, const char *identifier, size_t identifier_length)
{
    if (!HOST_HAS(host, current_downloads)) return 0;
    scheduled_search search = {identifier, identifier_length, 0};
    int32_t code = 0;
    host->current_downloads(find_scheduled, &search, &code);
    return search.found;
}

/* Schedules every asset of the catalog at `catalog_path` that is neither in `assets_folder` nor
 * already scheduled, non-essential, its URL resolved against `catalog->url`. */
static void schedule_catalog_assets(const ba_host_api *host, const ba_download *catalog, const char *catalog_path,
                                    const char *assets_folder)
{
    jparser jp;
    document_layout layout;
    char *text = load_document(host, "catalog", catalog_path, strlen(catalog_path), &jp, &layout);
    if (text == NULL) return;
    size_t scheduled = 0, index = 0;
    int first = 1;
    manifest_asset asset;
    for (; next_asset(&jp, &first, index, &asset); index++) {
        if (!asset.has_identifier || !asset.has_url || asset.url_length == 0) {
            host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": catalog asset %zu has no identifier or url; skipped", index);
            continue;
        }
        char *file = join_path(assets_folder, strlen(assets_folder), asset.identifier, asset.identifier_length);
        struct stat info;
        int have = file != NULL && is_file_name(asset.identifier, asset.identifier_length) && stat(file, &info) == 0;
        free(file);
        if (have || is_scheduled(host, asset.identifier, asset.identifier_length)) continue;

        char *url = resolve_url(catalog->url, catalog->url_length, asset.url, asset.url_length);
        ba_download download = {
            .struct_size = (uint32_t)sizeof(ba_download),
            .flags = 0u,
            .identifier = asset.identifier,
            .identifier_length = asset.identifier_length,
            .url = url != NULL ? url : asset.url, /* unresolvable: the host says why it refuses it */
            .url_length = url != NULL ? strlen(url) : asset.url_length,
            .application_group_identifier = catalog->application_group_identifier,
            .application_group_identifier_length =
                catalog->application_group_identifier != NULL ? catalog->application_group_identifier_length : 0,
            .file_size = asset.has_file_size ? asset.file_size : 0,
            .priority = asset.has_priority ? asset.priority : BA_PRIORITY_DEFAULT,
            .sha256_hex = asset.has_sha256 && asset.sha256_length > 0 ? asset.sha256 : NULL,
            .sha256_hex_length = asset.has_sha256 ? asset.sha256_length : 0,
        };
        int32_t code = 0;
        if (HOST_HAS(host, schedule_download) && host->schedule_download(&download, &code) == BA_OK) {
            scheduled++;
        } else {
            size_t message_length;
            const char *message = host_last_error(host, &message_length);
            host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot schedule %.*s: %.*s (code %d)",
                     SV(asset.identifier, asset.identifier_length), SV(message, message_length), (int)code);
        }
        free(url);
    }
    free(text);
    host_log(host, BA_LOG_INFO, SAMPLE_NAME ": scheduled %zu assets from the catalog", scheduled);
}

/* Moves the finished file to <container>/Assets/<identifier> (replacing an older one) while
 * holding exclusive control; for the catalog, schedules its assets before letting go. */
static void sample_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                     const char *file_path, size_t file_path_length)
{
    (void)context;
    if (!COVERS(download, ba_download, application_group_identifier_length)) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": no download information");
        return;
    }
    const char *identifier = download->identifier;
    size_t identifier_length = identifier != NULL ? download->identifier_length : 0;
    if (file_path == NULL) file_path_length = 0;
    host_log(host, BA_LOG_INFO, SAMPLE_NAME ": finished %.*s at %.*s", SV(identifier, identifier_length),
             SV(file_path, file_path_length));

    const char *group = download->application_group_identifier;
    size_t group_length = group != NULL ? download->application_group_identifier_length : 0;
    size_t container_length = 0;
    const char *container = container_for_group(group, group_length, &container_length);
    if (container == NULL) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": no app group container for \"%.*s\"; %.*s is not kept",
                 SV(group, group_length), SV(identifier, identifier_length));
        return;
    }
    if (!is_file_name(identifier, identifier_length) || file_path_length == 0
        || memchr(file_path, '\0', file_path_length) != NULL) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot keep %.*s: not a file name, or no file",
                 SV(identifier, identifier_length));
        return;
    }
    char *assets_folder = join_path(container, container_length, "Assets", 6);
    char *destination = assets_folder != NULL
                            ? join_path(assets_folder, strlen(assets_folder), identifier, identifier_length)
                            : NULL;
    char *source = copy_string(file_path, file_path_length);
    if (destination == NULL || source == NULL) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": out of memory");
        goto done;
    }

    /* The app reads Assets/ too: change it only while holding exclusive control. The wait has no
     * timeout of its own (as withExclusiveControl without a date); the call's deadline bounds it. */
    int32_t code = 0;
    if (!HOST_HAS(host, acquire_exclusive_control) || host->acquire_exclusive_control(-1, &code) != BA_OK) {
        size_t message_length;
        const char *message = host_last_error(host, &message_length);
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": exclusive control not acquired: %.*s", SV(message, message_length));
        goto done;
    }
    if (mkdir(assets_folder, 0777) != 0 && errno != EEXIST) {
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot move %.*s to %s: mkdir %s: %s",
                 SV(identifier, identifier_length), destination, assets_folder, strerror(errno));
    } else if (rename(source, destination) != 0) { /* replaces an older file atomically */
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot move %.*s to %s: %s", SV(identifier, identifier_length),
                 destination, strerror(errno));
    } else {
        host_log(host, BA_LOG_INFO, SAMPLE_NAME ": moved %.*s to %s", SV(identifier, identifier_length), destination);
        /* Still under exclusive control: the app never sees a catalog whose assets are not
         * scheduled yet. */
        if (identifier_length == sizeof(CATALOG_IDENTIFIER) - 1
            && memcmp(identifier, CATALOG_IDENTIFIER, identifier_length) == 0)
            schedule_catalog_assets(host, download, destination, assets_folder);
    }
    if (HOST_HAS(host, release_exclusive_control)) host->release_exclusive_control(&code);
done:
    free(assets_folder);
    free(destination);
    free(source);
}

/* Logs the failure; an essential download is scheduled again as a non-essential one (as in the
 * WWDC23 session: the app still gets it, in the background). */
static void sample_download_failed(void *context, const ba_host_api *host, const ba_download *download, const ba_error *error)
{
    (void)context;
    const char *identifier = NULL, *message = NULL;
    size_t identifier_length = 0, message_length = 0;
    int code = 0;
    if (COVERS(download, ba_download, identifier_length) && download->identifier != NULL) {
        identifier = download->identifier;
        identifier_length = download->identifier_length;
    }
    if (COVERS(error, ba_error, code)) code = (int)error->code;
    if (COVERS(error, ba_error, message_length) && error->message != NULL) {
        message = error->message;
        message_length = error->message_length;
    }
    host_log(host, BA_LOG_INFO, SAMPLE_NAME ": failed %.*s: %.*s (code %d)", SV(identifier, identifier_length),
             SV(message, message_length), code);

    if (!COVERS(download, ba_download, flags) || !(download->flags & BA_DOWNLOAD_FLAG_ESSENTIAL)) return;
    /* A copy of what the host handed over (as much of it as it wrote), no longer essential. */
    ba_download copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, download, download->struct_size < sizeof copy ? download->struct_size : sizeof copy);
    copy.struct_size = (uint32_t)sizeof copy;
    copy.flags &= ~(uint32_t)BA_DOWNLOAD_FLAG_ESSENTIAL;
    copy.unique_identifier = NULL; /* a new download: the system assigns it a new one */
    copy.unique_identifier_length = 0;
    copy.state = 0;
    int32_t schedule_code = 0;
    if (HOST_HAS(host, schedule_download) && host->schedule_download(&copy, &schedule_code) == BA_OK) {
        host_log(host, BA_LOG_INFO, SAMPLE_NAME ": re-queued %.*s as a non-essential download",
                 SV(identifier, identifier_length));
    } else {
        size_t reason_length;
        const char *reason = host_last_error(host, &reason_length);
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": cannot re-queue %.*s: %.*s (code %d)",
                 SV(identifier, identifier_length), SV(reason, reason_length), (int)schedule_code);
    }
}

static ba_challenge_disposition sample_download_received_challenge(void *context, const ba_host_api *host,
                                                                   const ba_download *download,
                                                                   const ba_auth_challenge *challenge)
{
    (void)context;
    (void)download;
    (void)challenge;
    const char *user = getenv("BA_SAMPLE_USER");
    const char *password = getenv("BA_SAMPLE_PASSWORD");
    if (user == NULL || password == NULL || !HOST_HAS(host, use_credential)) return BA_CHALLENGE_PERFORM_DEFAULT_HANDLING;
    int32_t code = 0;
    if (host->use_credential(user, strlen(user), password, strlen(password), &code) != BA_OK) {
        size_t message_length;
        const char *message = host_last_error(host, &message_length);
        host_log(host, BA_LOG_ERROR, SAMPLE_NAME ": the credential was refused: %.*s (code %d)", SV(message, message_length),
                 (int)code);
        return BA_CHALLENGE_PERFORM_DEFAULT_HANDLING;
    }
    return BA_CHALLENGE_USE_CREDENTIAL;
}

static void sample_extension_will_terminate(void *context, const ba_host_api *host)
{
    (void)context;
    host_log(host, BA_LOG_INFO, SAMPLE_NAME ": terminating");
}

/* ---- The descriptor ---------------------------------------------------------------------- */

/* One line makes the descriptor (lengths, struct_size and ABI version filled in) and exports it. */
BA_EXTENSION_DEFINE(SAMPLE_NAME, "1.0.0",
                    .downloads_for_request = sample_downloads_for_request,
                    .download_finished = sample_download_finished,
                    .download_failed = sample_download_failed,
                    .download_received_challenge = sample_download_received_challenge,
                    .extension_will_terminate = sample_extension_will_terminate)

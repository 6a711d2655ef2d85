/*
 * A small, bounded JSON reader for basd's frames (internal to libba_client).
 *
 * The whole text is parsed into a flat array of values; strings are decoded into one buffer, each
 * NUL-terminated. Everything is bounded before it is allocated: the text (BAC_JSON_MAX_TEXT), the
 * depth of nesting, the number of values, a number's digits. A string with an escaped NUL
 * (\u0000), a raw control character or bad UTF-8 is refused, as is anything after the value.
 */
#ifndef BA_CLIENT_JSON_H
#define BA_CLIENT_JSON_H

#include <stddef.h>
#include <stdint.h>

#define BAC_JSON_MAX_TEXT (1u << 20)
#define BAC_JSON_MAX_DEPTH 32
#define BAC_JSON_MAX_VALUES (1u << 17)

typedef enum bac_json_type {
    BAC_JSON_NULL,
    BAC_JSON_FALSE,
    BAC_JSON_TRUE,
    BAC_JSON_NUMBER,
    BAC_JSON_STRING,
    BAC_JSON_ARRAY,
    BAC_JSON_OBJECT,
} bac_json_type;

typedef struct bac_json_value {
    uint8_t type;
    uint8_t is_integer; /* a number written without fraction or exponent that fits in int64 */
    int32_t next;       /* the next element or member of the parent, or -1 */
    int32_t first;      /* arrays and objects: the first element or member, or -1 */
    int32_t key;        /* a member: its key's offset in `strings`, else -1 */
    uint32_t length;    /* strings: bytes; arrays and objects: count */
    uint32_t string;    /* strings: offset in `strings` */
    int64_t integer;
    double number;
} bac_json_value;

typedef struct bac_json {
    bac_json_value *values;
    uint32_t count;
    uint32_t capacity;
    char *strings;
    size_t strings_length;
    const char *failure; /* why parsing failed (static text) */
} bac_json;

/* Parses `text` (`length` bytes) into `json` (freed with bac_json_free, also after a failure).
 * Returns 0, or -1 with `json->failure` set. The root is value 0. */
int bac_json_parse(bac_json *json, const char *text, size_t length);
void bac_json_free(bac_json *json);

/* The member `key` of object `object`, or -1 (also when `object` is -1 or not an object). */
int32_t bac_json_member(const bac_json *json, int32_t object, const char *key);
/* The string at `value`, or NULL when it is not a string. */
const char *bac_json_string(const bac_json *json, int32_t value);
/* The integer at `value` into *out: 0, or -1 when it is not an integer. */
int bac_json_integer(const bac_json *json, int32_t value, int64_t *out);
/* The type of `value` (-1: none). */
int bac_json_type_of(const bac_json *json, int32_t value);

#endif

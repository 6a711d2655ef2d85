/* The bounded JSON reader of libba_client (json.h). */
#include "json.h"

#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const unsigned char *text;
    size_t length;
    size_t at;
    bac_json *json;
} parser;

static int fail(parser *p, const char *why) {
    if (p->json->failure == NULL) p->json->failure = why;
    return -1;
}

static void skip_space(parser *p) {
    while (p->at < p->length) {
        unsigned char c = p->text[p->at];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->at++;
    }
}

/* A new value (its index), the array grown geometrically up to the bound. */
static int32_t new_value(parser *p, uint8_t type) {
    bac_json *json = p->json;
    if (json->count >= BAC_JSON_MAX_VALUES) return fail(p, "too many values");
    if (json->count == json->capacity) {
        uint32_t capacity = json->capacity ? json->capacity * 2 : 64;
        if (capacity > BAC_JSON_MAX_VALUES) capacity = BAC_JSON_MAX_VALUES;
        bac_json_value *grown = realloc(json->values, (size_t)capacity * sizeof(bac_json_value));
        if (grown == NULL) return fail(p, "out of memory");
        json->values = grown;
        json->capacity = capacity;
    }
    bac_json_value *value = &json->values[json->count];
    memset(value, 0, sizeof(*value));
    value->type = type;
    value->next = -1;
    value->first = -1;
    value->key = -1;
    return (int32_t)json->count++;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser *p, uint32_t *out) {
    if (p->length - p->at < 4) return fail(p, "a truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p->text[p->at + i]);
        if (digit < 0) return fail(p, "a bad \\u escape");
        value = value * 16 + (uint32_t)digit;
    }
    p->at += 4;
    *out = value;
    return 0;
}

/* The length of the UTF-8 sequence at `s` (at most `left` bytes), or 0 when it is not valid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_sequence(const unsigned char *s, size_t left) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    uint32_t code;
    if (c >= 0xC2 && c <= 0xDF) need = 2, code = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) need = 3, code = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) need = 4, code = c & 0x07;
    else return 0;
    if (left < need) return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        code = (code << 6) | (s[i] & 0x3F);
    }
    if ((need == 3 && code < 0x800) || (need == 4 && code < 0x10000) || code > 0x10FFFF) return 0;
    if (code >= 0xD800 && code <= 0xDFFF) return 0;
    return need;
}

static void put_utf8(char *out, size_t *at, uint32_t code) {
    if (code < 0x80) {
        out[(*at)++] = (char)code;
    } else if (code < 0x800) {
        out[(*at)++] = (char)(0xC0 | (code >> 6));
        out[(*at)++] = (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out[(*at)++] = (char)(0xE0 | (code >> 12));
        out[(*at)++] = (char)(0x80 | ((code >> 6) & 0x3F));
        out[(*at)++] = (char)(0x80 | (code & 0x3F));
    } else {
        out[(*at)++] = (char)(0xF0 | (code >> 18));
        out[(*at)++] = (char)(0x80 | ((code >> 12) & 0x3F));
        out[(*at)++] = (char)(0x80 | ((code >> 6) & 0x3F));
        out[(*at)++] = (char)(0x80 | (code & 0x3F));
    }
}

/* Reads a string (the opening quote is at p->at) into `strings`: its offset and length. A decoded
 * string is never longer than its text, so `strings` (the text's length + 1 per string's NUL,
 * bounded by the text's length + 1 in all) never overflows. */
static int read_string(parser *p, uint32_t *offset, uint32_t *length) {
    bac_json *json = p->json;
    p->at++; /* the quote */
    size_t start = json->strings_length;
    char *out = json->strings;
    size_t at = start;
    for (;;) {
        if (p->at >= p->length) return fail(p, "a truncated string");
        unsigned char c = p->text[p->at];
        if (c == '"') {
            p->at++;
            break;
        }
        if (c < 0x20) return fail(p, "a control character in a string");
        if (c == '\\') {
            if (p->at + 1 >= p->length) return fail(p, "a truncated escape");
            unsigned char e = p->text[p->at + 1];
            p->at += 2;
            switch (e) {
            case '"': out[at++] = '"'; break;
            case '\\': out[at++] = '\\'; break;
            case '/': out[at++] = '/'; break;
            case 'b': out[at++] = '\b'; break;
            case 'f': out[at++] = '\f'; break;
            case 'n': out[at++] = '\n'; break;
            case 'r': out[at++] = '\r'; break;
            case 't': out[at++] = '\t'; break;
            case 'u': {
                uint32_t code;
                if (read_hex4(p, &code) < 0) return -1;
                if (code >= 0xDC00 && code <= 0xDFFF) return fail(p, "a lone low surrogate");
                if (code >= 0xD800 && code <= 0xDBFF) {
                    uint32_t low;
                    if (p->length - p->at < 2 || p->text[p->at] != '\\' || p->text[p->at + 1] != 'u')
                        return fail(p, "a lone high surrogate");
                    p->at += 2;
                    if (read_hex4(p, &low) < 0) return -1;
                    if (low < 0xDC00 || low > 0xDFFF) return fail(p, "a bad surrogate pair");
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                }
                if (code == 0) return fail(p, "a NUL in a string");
                put_utf8(out, &at, code);
                break;
            }
            default: return fail(p, "a bad escape");
            }
            continue;
        }
        size_t sequence = utf8_sequence(p->text + p->at, p->length - p->at);
        if (sequence == 0) return fail(p, "bad UTF-8 in a string");
        memcpy(out + at, p->text + p->at, sequence);
        at += sequence;
        p->at += sequence;
    }
    out[at++] = '\0';
    *offset = (uint32_t)start;
    *length = (uint32_t)(at - start - 1);
    json->strings_length = at;
    return 0;
}

/* A number, as JSON writes it: its integer value when it has no fraction or exponent and fits,
 * and a double (read by hand: strtod depends on the program's locale). */
static int read_number(parser *p, bac_json_value *value) {
    size_t start = p->at;
    int negative = 0;
    if (p->text[p->at] == '-') negative = 1, p->at++;
    if (p->at >= p->length || p->text[p->at] < '0' || p->text[p->at] > '9') return fail(p, "a bad number");
    if (p->text[p->at] == '0' && p->at + 1 < p->length && p->text[p->at + 1] >= '0' && p->text[p->at + 1] <= '9')
        return fail(p, "a number with a leading zero");
    uint64_t magnitude = 0;
    int fits = 1;
    double number = 0;
    while (p->at < p->length && p->text[p->at] >= '0' && p->text[p->at] <= '9') {
        unsigned digit = p->text[p->at] - '0';
        if (magnitude > (UINT64_MAX - digit) / 10) fits = 0;
        else magnitude = magnitude * 10 + digit;
        number = number * 10 + digit;
        p->at++;
    }
    int integer = 1;
    if (p->at < p->length && p->text[p->at] == '.') {
        integer = 0;
        p->at++;
        double scale = 0.1;
        int digits = 0;
        while (p->at < p->length && p->text[p->at] >= '0' && p->text[p->at] <= '9') {
            number += (p->text[p->at] - '0') * scale;
            scale /= 10;
            digits++;
            p->at++;
        }
        if (digits == 0) return fail(p, "a bad fraction");
    }
    if (p->at < p->length && (p->text[p->at] == 'e' || p->text[p->at] == 'E')) {
        integer = 0;
        p->at++;
        int exponent_negative = 0;
        if (p->at < p->length && (p->text[p->at] == '+' || p->text[p->at] == '-'))
            exponent_negative = p->text[p->at] == '-', p->at++;
        int exponent = 0, digits = 0;
        while (p->at < p->length && p->text[p->at] >= '0' && p->text[p->at] <= '9') {
            if (exponent < 10000) exponent = exponent * 10 + (p->text[p->at] - '0');
            digits++;
            p->at++;
        }
        if (digits == 0) return fail(p, "a bad exponent");
        for (int i = 0; i < exponent && number != 0 && number < 1e308 && number > 1e-308; i++)
            number = exponent_negative ? number / 10 : number * 10;
    }
    if (p->at - start > 64) return fail(p, "a number over 64 characters");
    value->number = negative ? -number : number;
    if (integer && fits && magnitude <= (uint64_t)INT64_MAX + (uint64_t)negative) {
        value->is_integer = 1;
        value->integer = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    }
    return 0;
}

static int literal(parser *p, const char *word) {
    size_t length = strlen(word);
    if (p->length - p->at < length || memcmp(p->text + p->at, word, length) != 0) return fail(p, "a bad literal");
    p->at += length;
    return 0;
}

static int32_t read_value(parser *p, int depth);

/* An array or an object (its opening bracket is at p->at). */
static int read_container(parser *p, int32_t index, int depth) {
    int object = p->text[p->at] == '{';
    unsigned char close = object ? '}' : ']';
    p->at++;
    skip_space(p);
    if (p->at < p->length && p->text[p->at] == close) {
        p->at++;
        return 0;
    }
    int32_t last = -1;
    uint32_t count = 0;
    for (;;) {
        skip_space(p);
        uint32_t key = 0, key_length = 0;
        if (object) {
            if (p->at >= p->length || p->text[p->at] != '"') return fail(p, "an object key that is not a string");
            if (read_string(p, &key, &key_length) < 0) return -1;
            skip_space(p);
            if (p->at >= p->length || p->text[p->at] != ':') return fail(p, "a member without ':'");
            p->at++;
        }
        int32_t child = read_value(p, depth + 1);
        if (child < 0) return -1;
        if (object) p->json->values[child].key = (int32_t)key;
        if (last < 0) p->json->values[index].first = child;
        else p->json->values[last].next = child;
        last = child;
        count++;
        skip_space(p);
        if (p->at >= p->length) return fail(p, "a truncated array or object");
        if (p->text[p->at] == ',') {
            p->at++;
            continue;
        }
        if (p->text[p->at] == close) {
            p->at++;
            break;
        }
        return fail(p, "a bad separator");
    }
    p->json->values[index].length = count;
    return 0;
}

static int32_t read_value(parser *p, int depth) {
    if (depth > BAC_JSON_MAX_DEPTH) return fail(p, "nested too deeply");
    skip_space(p);
    if (p->at >= p->length) return fail(p, "a truncated value");
    unsigned char c = p->text[p->at];
    int32_t index;
    switch (c) {
    case '{':
    case '[':
        index = new_value(p, c == '{' ? BAC_JSON_OBJECT : BAC_JSON_ARRAY);
        if (index < 0 || read_container(p, index, depth) < 0) return -1;
        return index;
    case '"': {
        index = new_value(p, BAC_JSON_STRING);
        if (index < 0) return -1;
        uint32_t offset, length;
        if (read_string(p, &offset, &length) < 0) return -1;
        p->json->values[index].string = offset;
        p->json->values[index].length = length;
        return index;
    }
    case 't':
        index = new_value(p, BAC_JSON_TRUE);
        return index < 0 || literal(p, "true") < 0 ? -1 : index;
    case 'f':
        index = new_value(p, BAC_JSON_FALSE);
        return index < 0 || literal(p, "false") < 0 ? -1 : index;
    case 'n':
        index = new_value(p, BAC_JSON_NULL);
        return index < 0 || literal(p, "null") < 0 ? -1 : index;
    default:
        if (c != '-' && (c < '0' || c > '9')) return fail(p, "not a JSON value");
        index = new_value(p, BAC_JSON_NUMBER);
        if (index < 0 || read_number(p, &p->json->values[index]) < 0) return -1;
        return index;
    }
}

int bac_json_parse(bac_json *json, const char *text, size_t length) {
    memset(json, 0, sizeof(*json));
    if (length > BAC_JSON_MAX_TEXT) {
        json->failure = "a text over the bound";
        return -1;
    }
    /* Every string's bytes come from the text: its decoded bytes and its NUL together are at most
     * its quotes' and contents' bytes. */
    json->strings = malloc(length + 1);
    if (json->strings == NULL) {
        json->failure = "out of memory";
        return -1;
    }
    parser p = {(const unsigned char *)text, length, 0, json};
    if (read_value(&p, 0) < 0) return -1;
    skip_space(&p);
    if (p.at != length) return fail(&p, "text after the value");
    return 0;
}

void bac_json_free(bac_json *json) {
    free(json->values);
    free(json->strings);
    memset(json, 0, sizeof(*json));
}

int bac_json_type_of(const bac_json *json, int32_t value) {
    if (value < 0 || (uint32_t)value >= json->count) return -1;
    return json->values[value].type;
}

int32_t bac_json_member(const bac_json *json, int32_t object, const char *key) {
    if (bac_json_type_of(json, object) != BAC_JSON_OBJECT) return -1;
    for (int32_t child = json->values[object].first; child >= 0; child = json->values[child].next) {
        if (strcmp(json->strings + json->values[child].key, key) == 0) return child;
    }
    return -1;
}

const char *bac_json_string(const bac_json *json, int32_t value) {
    if (bac_json_type_of(json, value) != BAC_JSON_STRING) return NULL;
    return json->strings + json->values[value].string;
}

int bac_json_integer(const bac_json *json, int32_t value, int64_t *out) {
    if (bac_json_type_of(json, value) != BAC_JSON_NUMBER || !json->values[value].is_integer) return -1;
    *out = json->values[value].integer;
    return 0;
}

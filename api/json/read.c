/*
 * api/json/read.c — the strict JSON reader of json/read.h.
 *
 * A recursive descent over the bytes (the body need not be NUL-terminated), with
 * a fast path for the common case of runs of plain ASCII in strings; numbers are
 * checked and converted in one pass by api/json/numparse.h (integers of up to 18 digits
 * exactly, others correctly rounded on fast_float). Values are built with jansson's
 * constructors; on any failure the partial tree is released and err says why.
 *
 * A large object may be read in two halves at once (api_json_read_body): a quick
 * pass that looks only at brackets and quotes finds the comma between two members
 * nearest the middle, a second thread reads the members after it while this one
 * reads those before, and the two objects are joined. Anything unexpected (a half
 * that does not read, a key in both) sends the body through the one-thread reader,
 * so what is accepted and every error message are the same as with it.
 */
#include "api/json/read.h"
#include "api/i18n/holes.h"
#include "api/json/arena.h"
#include "api/json/numparse.h"
#include "api/json/test_hooks.h"
#include "api/json/utf8.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct reader {
    const char *start, *p, *end;
    unsigned depth;
    struct api_json_error *err;
    bool pack; /* read matrices of numbers straight into numbers (api_json_read_body) */
};

/* A hole filled by data alone, written as printf writes fmt. */
static struct api_json_hole data_hole(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static struct api_json_hole data_hole(const char *fmt, ...)
{
    struct api_json_hole h = { "{1}", "" };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h.data, sizeof h.data, fmt, ap);
    va_end(ap);
    return h;
}

/*
 * Records the first problem, at byte `at`: the sentence `what` (API_JSON_N) and its
 * n_holes holes, and the English they make; returns NULL for the caller to pass up.
 */
static json_t *fail_with(struct reader *r, const char *at, const char *what,
                         const struct api_json_hole *holes, unsigned n_holes)
{
    struct api_json_error *e = r->err;
    if (e->text[0] != '\0')
        return NULL;
    e->what = what;
    e->n_holes = n_holes;
    char parts[2][96];
    const char *args[2];
    for (unsigned i = 0; i < n_holes; i++) {
        e->holes[i] = holes[i];
        const char *data = holes[i].data;
        api_fill_holes(parts[i], sizeof parts[i], holes[i].phrase, &data, 1);
        args[i] = parts[i];
    }
    api_fill_holes(e->text, sizeof e->text, what, args, n_holes);
    e->position = (size_t)(at - r->start);
    e->line = 1;
    const char *line_start = r->start;
    for (const char *c = r->start; c < at; c++) {
        if (*c == '\n') {
            e->line++;
            line_start = c + 1;
        }
    }
    e->column = (size_t)(at - line_start) + 1;
    return NULL;
}

static json_t *fail_at(struct reader *r, const char *at, const char *what)
{
    return fail_with(r, at, what, NULL, 0);
}

static json_t *fail_at1(struct reader *r, const char *at, const char *what,
                        struct api_json_hole h1)
{
    return fail_with(r, at, what, &h1, 1);
}

static json_t *fail_at2(struct reader *r, const char *at, const char *what,
                        struct api_json_hole h1, struct api_json_hole h2)
{
    struct api_json_hole holes[2] = { h1, h2 };
    return fail_with(r, at, what, holes, 2);
}

static json_t *no_memory(struct reader *r)
{
    r->err->no_memory = true;
    return fail_at(r, r->p, API_JSON_N("out of memory"));
}

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Past the white space at p. */
static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

static void skip_space(struct reader *r)
{
    r->p = skip_ws(r->p, r->end);
}

/* What is at r->p, for messages: "'x'", "byte 0x0c", or "the end of the body". */
static struct api_json_hole what_is_here(const struct reader *r)
{
    if (r->p >= r->end)
        return (struct api_json_hole){ API_JSON_N("the end of the body"), "" };
    unsigned char c = (unsigned char)*r->p;
    if (c >= 0x20 && c < 0x7f)
        return data_hole("'%c'", c);
    struct api_json_hole h = data_hole("0x%02x", c);
    h.phrase = API_JSON_N("byte {1}");
    return h;
}

static json_t *read_value(struct reader *r);

/* ---- strings ---- */

struct strbuf {
    char *data;
    size_t len, cap;
    char inline_buf[256];
};

static bool strbuf_put(struct strbuf *s, const char *bytes, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap * 2;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *grown = s->data == s->inline_buf ? malloc(cap) : realloc(s->data, cap);
        if (grown == NULL)
            return false;
        if (s->data == s->inline_buf)
            memcpy(grown, s->inline_buf, s->len);
        s->data = grown;
        s->cap = cap;
    }
    memcpy(s->data + s->len, bytes, n);
    s->len += n;
    return true;
}

static void strbuf_free(struct strbuf *s)
{
    if (s->data != s->inline_buf)
        free(s->data);
}

static int hex4(const char *p, const char *end)
{
    if (end - p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One escape after the backslash at r->p; appends its bytes. */
static bool read_escape(struct reader *r, struct strbuf *s)
{
    const char *at = r->p;
    if (r->p + 1 >= r->end) {
        fail_at(r, at, API_JSON_N("unterminated string"));
        return false;
    }
    char c = r->p[1];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = c != '\0' ? strchr(from, c) : NULL;
    if (hit != NULL) {
        r->p += 2;
        if (strbuf_put(s, &to[hit - from], 1))
            return true;
        no_memory(r);
        return false;
    }
    if (c != 'u') {
        fail_at1(r, at, API_JSON_N("invalid escape '\\{1}' in string"),
                 data_hole("%c", c >= 0x20 && c < 0x7f ? c : '?'));
        return false;
    }
    int unit = hex4(r->p + 2, r->end);
    if (unit < 0) {
        fail_at(r, at, API_JSON_N("invalid \\u escape: four hex digits expected"));
        return false;
    }
    unsigned long cp = (unsigned long)unit;
    r->p += 6;
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
        fail_at1(r, at, API_JSON_N("lone low surrogate \\u{1} in string"),
                 data_hole("%04X", (unsigned)unit));
        return false;
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
        int low = r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' ? hex4(r->p + 2, r->end)
                                                                           : -1;
        if (low < 0xDC00 || low > 0xDFFF) {
            fail_at1(r, at, API_JSON_N("high surrogate \\u{1} without its low half"),
                     data_hole("%04X", (unsigned)unit));
            return false;
        }
        cp = 0x10000 + (((unsigned long)unit - 0xD800) << 10) + ((unsigned long)low - 0xDC00);
        r->p += 6;
    }
    if (cp == 0) {
        /* Strings are C strings below: a NUL would silently cut a label or key short. */
        fail_at(r, at, API_JSON_N("\\u0000 is not allowed in strings"));
        return false;
    }
    unsigned char bytes[API_UTF8_MAX]; /* cp is neither 0 nor a surrogate: it has its bytes */
    if (strbuf_put(s, (const char *)bytes, api_utf8_encode((uint32_t)cp, bytes)))
        return true;
    no_memory(r);
    return false;
}

/* Reads a string at r->p (which is '"') into s, NUL-terminated; false on error. */
static bool read_string_into(struct reader *r, struct strbuf *s)
{
    const char *open = r->p++;
    for (;;) {
        const char *run = r->p;
        while (r->p < r->end && (unsigned char)*r->p >= 0x20 && *r->p != '"' &&
               *r->p != '\\' && (unsigned char)*r->p < 0x80)
            r->p++;
        if (r->p > run && !strbuf_put(s, run, (size_t)(r->p - run))) {
            no_memory(r);
            return false;
        }
        if (r->p >= r->end) {
            fail_at(r, open, API_JSON_N("unterminated string"));
            return false;
        }
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') {
            r->p++;
            s->data[s->len] = '\0';
            return true;
        }
        if (c == '\\') {
            if (!read_escape(r, s))
                return false;
            continue;
        }
        if (c < 0x20) {
            fail_at1(r, r->p, API_JSON_N("control character 0x{1} in string: escape it"),
                     data_hole("%02x", c));
            return false;
        }
        /* c >= 0x80 here: the bytes of one non-ASCII character, or a refusal */
        size_t n = api_utf8_len((const unsigned char *)r->p, (size_t)(r->end - r->p));
        if (n == 0) {
            fail_at(r, r->p, API_JSON_N("invalid UTF-8 in string"));
            return false;
        }
        if (!strbuf_put(s, r->p, n)) {
            no_memory(r);
            return false;
        }
        r->p += n;
    }
}

static json_t *read_string(struct reader *r)
{
    struct strbuf s = { .cap = sizeof s.inline_buf };
    s.data = s.inline_buf;
    json_t *v = NULL;
    if (read_string_into(r, &s)) {
        v = json_stringn_nocheck(s.data, s.len);
        if (v == NULL)
            no_memory(r);
    }
    strbuf_free(&s);
    return v;
}

/* ---- numbers ---- */

static json_t *read_number(struct reader *r)
{
    const char *start = r->p;
    struct api_json_number n;
    switch (api_read_json_number(start, r->end, &n)) {
    case API_NUMBER_OK:
        break;
    case API_NUMBER_NO_DIGIT:
        return fail_at(r, start, API_JSON_N("invalid number: a digit is expected after '-'"));
    case API_NUMBER_LEADING_ZERO:
        return fail_at(r, start, API_JSON_N("invalid number: no leading zeros"));
    case API_NUMBER_NO_FRACTION_DIGIT:
        return fail_at(r, start, API_JSON_N("invalid number: a digit is expected after '.'"));
    case API_NUMBER_NO_EXPONENT_DIGIT:
        return fail_at(r, start, API_JSON_N("invalid number: a digit is expected in the exponent"));
    }
    r->p = n.end;
    if (!n.is_integer && !isfinite(n.real)) {
        if (r->err->text[0] == '\0')
            r->err->out_of_range = true;
        return fail_at(r, start, API_JSON_N("number out of range: it does not fit in a double"));
    }
    json_t *v = n.is_integer ? json_integer(n.integer) : json_real(n.real);
    return v != NULL ? v : no_memory(r);
}

/* ---- containers ---- */

static bool enter(struct reader *r)
{
    if (++r->depth <= API_JSON_MAX_DEPTH)
        return true;
    fail_at1(r, r->p, API_JSON_N("nesting deeper than {1} levels"),
             data_hole("%d", API_JSON_MAX_DEPTH));
    return false;
}

/*
 * After an item of a container that `close` ends: past a ',' (another item follows),
 * at `stop` (a cut between two halves; see read_object_halves), or past `close`
 * when stop is NULL. Anything else is an error.
 */
enum after_item { ANOTHER_ITEM, CONTAINER_DONE, CONTAINER_BAD };

static enum after_item after_item(struct reader *r, const char *stop, char close)
{
    skip_space(r);
    if (r->p == stop)
        return CONTAINER_DONE;
    if (r->p < r->end && *r->p == ',') {
        r->p++;
        return ANOTHER_ITEM;
    }
    if (stop == NULL && r->p < r->end && *r->p == close) {
        r->p++;
        return CONTAINER_DONE;
    }
    fail_at2(r, r->p, API_JSON_N("',' or '{1}' expected, not {2}"), data_hole("%c", close),
             what_is_here(r));
    return CONTAINER_BAD;
}

/* Elements into array until after_item says the array is done; false on error. */
static bool read_elements(struct reader *r, json_t *array, const char *stop)
{
    for (;;) {
        /* A row of a matrix, the bulk of a large body, is numbers and bare commas:
         * those go straight to read_number and past the comma; anything else takes
         * the general path (white space, the end, a cut, errors). */
        const char *p = r->p;
        bool number = p < r->end && (*p == '-' || (unsigned char)(*p - '0') < 10);
        json_t *item = number ? read_number(r) : read_value(r);
        if (item == NULL)
            return false;
        if (json_array_append_new(array, item) != 0) {
            no_memory(r);
            return false;
        }
        if (r->p < r->end && *r->p == ',' && r->p != stop) {
            r->p++;
            continue;
        }
        enum after_item next = after_item(r, stop, ']');
        if (next != ANOTHER_ITEM)
            return next == CONTAINER_DONE;
    }
}

/* ---- matrices of numbers ---- */

static atomic_ulong matrices_packed;

unsigned long api_json_matrices_packed(void)
{
    return atomic_load(&matrices_packed);
}

static atomic_bool packing_off;

void api_json_packing_set(bool on)
{
    atomic_store(&packing_off, !on);
}

/* Whether r may read a matrix starting one level below its depth into numbers: a
 * request body (pack), packing not turned off, and an arena to file the numbers with. */
static bool may_pack(const struct reader *r)
{
    return r->pack && r->depth + 1 <= API_JSON_MAX_DEPTH && !atomic_load(&packing_off) &&
           api_json_arena_current() != NULL;
}

/* Numbers of a matrix as they are read: cells[0, n), room for cap. */
struct cell_run {
    double *cells;
    size_t n, cap;
};

/* Room for at least one more number in c; false without memory. */
static bool cell_room(struct cell_run *c)
{
    if (c->n < c->cap)
        return true;
    size_t cap = c->cap ? c->cap * 2 : 256;
    double *grown = cap < SIZE_MAX / sizeof *grown ? realloc(c->cells, cap * sizeof *grown) : NULL;
    if (grown == NULL)
        return false;
    c->cells = grown;
    c->cap = cap;
    return true;
}

/*
 * Past the rows of numbers at p (the first row's '['), each as long as the first,
 * their numbers appended to c, up to and past the array's ']', or, when stop is set,
 * up to stop (a comma between two rows, where a body is cut in halves). NULL at
 * anything else: a row that is empty, ragged or holds something other than a number,
 * a number the reader would refuse, bad syntax. Checks nothing the general reader
 * does not; reports nothing.
 */
static const char *scan_number_rows(const char *p, const char *end, const char *stop,
                                    struct cell_run *c, size_t *rows, size_t *cols)
{
    *rows = *cols = 0;
    for (;;) {
        if (p >= end || *p != '[')
            return NULL;
        size_t row_start = c->n;
        p++;
        for (;;) { /* the row's numbers, as far as c has room, then more room */
            if (!cell_room(c))
                return NULL;
            /* Each number as json_number_value gives it for the node read_number
             * would make (an integer's: -0 is the integer 0). */
            struct api_number_row got = api_read_number_row(p, end, c->cells + c->n, c->cap - c->n);
            if (got.next == NULL)
                return NULL;
            c->n += got.count;
            p = got.next;
            if (!got.more)
                break;
        }
        size_t len = c->n - row_start;
        if (*rows == 0)
            *cols = len;
        else if (len != *cols)
            return NULL;
        ++*rows;
        p = skip_ws(p, end); /* p is past the row's ']' */
        if (stop != NULL && p == stop)
            return p;
        if (stop == NULL && p < end && *p == ']')
            return p + 1;
        if (p >= end || *p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
}

/* n empty arrays appended to array, the rows of a packed matrix; false without memory. */
static bool add_empty_rows(json_t *array, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(array, json_array()) != 0)
            return false;
    return true;
}

/*
 * The array whose '[' is at `open`, when it is a matrix of numbers (rows of numbers,
 * all of one length), read into numbers: the document gets an array of as many empty
 * rows, and the numbers are filed with the request's arena (api_json_packed_add) for
 * api_read_matrix. NULL, with the reader where it was, when the value is anything
 * else or memory runs short: the general reader then reads it and says what is wrong.
 * Called inside read_array, one level deep already.
 */
static json_t *read_packed_matrix(struct reader *r, const char *open)
{
    if (!may_pack(r))
        return NULL;
    struct cell_run c = { NULL, 0, 0 };
    size_t rows, cols;
    const char *after = scan_number_rows(r->p, r->end, NULL, &c, &rows, &cols);
    json_t *array = after != NULL ? json_array() : NULL;
    if (array != NULL && !add_empty_rows(array, rows)) {
        json_decref(array);
        array = NULL;
    }
    struct api_json_packed rec = { array, open, 0, c.cells, rows, cols, NULL };
    if (array != NULL)
        rec.text_len = (size_t)(after - open);
    if (array == NULL || !api_json_packed_add(&rec)) {
        json_decref(array);
        free(c.cells);
        return NULL;
    }
    atomic_fetch_add_explicit(&matrices_packed, 1, memory_order_relaxed);
    r->p = after;
    return array;
}

static json_t *read_array(struct reader *r)
{
    if (!enter(r))
        return NULL;
    const char *open = r->p;
    r->p++; /* '[' */
    skip_space(r);
    if (r->p < r->end && *r->p == '[') {
        json_t *packed = read_packed_matrix(r, open);
        if (packed != NULL) {
            r->depth--;
            return packed;
        }
    }
    json_t *array = json_array();
    if (array == NULL)
        return no_memory(r);
    if (r->p < r->end && *r->p == ']')
        r->p++;
    else if (!read_elements(r, array, NULL)) {
        json_decref(array);
        return NULL;
    }
    r->depth--;
    return array;
}

/*
 * A member's "key": into key (strbuf_free it), refused when object has it already;
 * the reader is left on the value. False on error.
 */
static bool read_key(struct reader *r, json_t *object, struct strbuf *key)
{
    key->cap = sizeof key->inline_buf;
    key->len = 0;
    key->data = key->inline_buf;
    if (r->p >= r->end || *r->p != '"') {
        fail_at1(r, r->p, API_JSON_N("a string key expected, not {1}"), what_is_here(r));
        return false;
    }
    const char *key_at = r->p;
    if (!read_string_into(r, key))
        return false;
    if (json_object_get(object, key->data) != NULL) {
        /* Which of two "q"s a parser keeps is a silent guess: refuse both. */
        fail_at1(r, key_at, API_JSON_N("duplicate object key \"{1}\""),
                 data_hole("%.60s", key->data));
        return false;
    }
    skip_space(r);
    if (r->p >= r->end || *r->p != ':') {
        fail_at1(r, r->p, API_JSON_N("':' expected after a key, not {1}"), what_is_here(r));
        return false;
    }
    r->p++;
    return true;
}

/* One "key": value member into object; false on error. */
static bool read_member(struct reader *r, json_t *object)
{
    struct strbuf key;
    json_t *value = read_key(r, object, &key) ? read_value(r) : NULL;
    if (value != NULL && json_object_set_new_nocheck(object, key.data, value) != 0) {
        no_memory(r);
        value = NULL;
    }
    strbuf_free(&key);
    return value != NULL;
}

/* Members into object until after_item says the object is done (a cut between two
 * halves may also stop it before a member: `stop` is then that member's key). */
static bool read_members(struct reader *r, json_t *object, const char *stop)
{
    for (;;) {
        skip_space(r);
        if (r->p == stop)
            return true;
        if (!read_member(r, object))
            return false;
        enum after_item next = after_item(r, stop, '}');
        if (next != ANOTHER_ITEM)
            return next == CONTAINER_DONE;
    }
}

static json_t *read_object(struct reader *r)
{
    if (!enter(r))
        return NULL;
    json_t *object = json_object();
    if (object == NULL)
        return no_memory(r);
    r->p++; /* '{' */
    skip_space(r);
    if (r->p < r->end && *r->p == '}')
        r->p++;
    else if (!read_members(r, object, NULL)) {
        json_decref(object);
        return NULL;
    }
    r->depth--;
    return object;
}

/* ---- values ---- */

static json_t *read_literal(struct reader *r, const char *word, json_t *(*make)(void))
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return fail_at(r, r->p, API_JSON_N("invalid literal: true, false or null expected"));
    r->p += n;
    json_t *v = make();
    return v != NULL ? v : no_memory(r);
}

static json_t *read_value(struct reader *r)
{
    skip_space(r);
    if (r->p >= r->end)
        return fail_at1(r, r->p, API_JSON_N("a value expected, not {1}"), what_is_here(r));
    switch (*r->p) {
    case '{': return read_object(r);
    case '[': return read_array(r);
    case '"': return read_string(r);
    case 't': return read_literal(r, "true", json_true);
    case 'f': return read_literal(r, "false", json_false);
    case 'n': return read_literal(r, "null", json_null);
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            return read_number(r);
        return fail_at1(r, r->p, API_JSON_N("a value expected, not {1}"), what_is_here(r));
    }
}

/* ---- an object's members on two threads ---- */

/*
 * Whether one of the eight bytes at p is a bracket, a brace or a quote: the bytes
 * that matter when a value is skipped. OR-ing 0x20 folds '[' ']' onto '{' '}' (no
 * other byte lands on them); a byte equal to c leaves a zero byte in v ^ c, which the
 * usual (x - 0x01…) & ~x & 0x80… finds without false alarms when there is none.
 */
static bool has_structural(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t folded = v | 0x2020202020202020u;
    uint64_t a = folded ^ 0x7B7B7B7B7B7B7B7Bu, b = folded ^ 0x7D7D7D7D7D7D7D7Du;
    uint64_t q = v ^ 0x2222222222222222u;
    return (((a - ones) & ~a) | ((b - ones) & ~b) | ((q - ones) & ~q)) & highs;
}

/*
 * The first byte at or after p that may be a bracket, a brace or a quote, or a
 * position fewer than eight bytes before end. With SSE2 (every x86-64), 32 bytes are
 * compared at a time and the first such byte is found exactly: a matrix of the large
 * bodies has a bracket every row (a kilobyte or more), and this scan is the only work
 * of the one-thread pass that decides where to cut a body in two.
 */
static const char *skip_plain(const char *p, const char *end)
{
#ifdef __SSE2__
    const __m128i fold = _mm_set1_epi8(0x20), open = _mm_set1_epi8(0x7B),
                  close = _mm_set1_epi8(0x7D), quote = _mm_set1_epi8('"');
    while (end - p >= 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
        __m128i fa = _mm_or_si128(a, fold), fb = _mm_or_si128(b, fold);
        __m128i ma = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(fa, open), _mm_cmpeq_epi8(fa, close)),
                                  _mm_cmpeq_epi8(a, quote));
        __m128i mb = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(fb, open), _mm_cmpeq_epi8(fb, close)),
                                  _mm_cmpeq_epi8(b, quote));
        unsigned mask = (unsigned)_mm_movemask_epi8(ma) | (unsigned)_mm_movemask_epi8(mb) << 16;
        if (mask != 0)
            return p + __builtin_ctz(mask);
        p += 32;
    }
#endif
    while (end - p >= 8 && !has_structural(p))
        p += 8;
    return p;
}

/* Past the string whose opening quote is at p, or NULL if it does not end. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/*
 * Past the value at p, found by brackets and quotes alone (no validation: a value
 * that is not valid JSON is the readers' to report), or NULL when the brackets do not
 * close. Inside brackets, runs of bytes without a bracket or quote are stepped over at
 * once (skip_plain; a matrix is mostly digits and commas): skipping them changes no
 * depth.
 */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL; /* no value at all */
    if (*p == '"')
        return skip_string(p, end);
    if (*p != '[' && *p != '{') { /* a scalar: up to a delimiter */
        while (p < end && *p != ',' && *p != '}' && *p != ']' && !is_space(*p))
            p++;
        return p;
    }
    size_t depth = 0;
    do {
        if (depth > 0)
            p = skip_plain(p, end);
        if (p >= end)
            return NULL;
        if (*p == '"') {
            if ((p = skip_string(p, end)) == NULL)
                return NULL;
            continue;
        }
        if (*p == '[' || *p == '{')
            depth++;
        else if (*p == ']' || *p == '}')
            depth--;
        p++;
    } while (depth > 0);
    return p;
}

/* Where a body is cut in two: at `comma`, between two members of the top-level object
 * or, when `array` is set, between two elements of the array at `array`, the value of
 * the member whose key starts at `member`. */
struct split {
    const char *comma, *member, *array;
};

/* Whether comma a is nearer mid than comma b (b may be NULL). */
static bool nearer(const char *a, const char *b, const char *mid)
{
    return b == NULL || (a <= mid ? mid - a : a - mid) < (b <= mid ? mid - b : b - mid);
}

/* The comma between two elements of the array at p nearest mid, or NULL. */
static const char *middle_element_comma(const char *p, const char *end, const char *mid)
{
    const char *best = NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return NULL;
    for (;;) {
        if ((p = skip_value(p, end)) == NULL)
            return NULL;
        p = skip_ws(p, end);
        if (p >= end || *p != ',')
            return best;
        if (!nearer(p, best, mid))
            return best; /* moving away from the middle */
        best = p;
        p = skip_ws(p + 1, end);
    }
}

/*
 * Where to cut an object body nearest its middle: inside the array that spans the
 * middle (a matrix, usually), else between members. False when there is no cut or the
 * bytes are not shaped like an object (the one-thread reader then says what is
 * wrong). Keys and values are only skipped here, not checked.
 */
static bool find_split(const char *start, const char *end, struct split *s)
{
    const char *mid = start + (end - start) / 2, *p = skip_ws(start, end);
    memset(s, 0, sizeof *s);
    if (p >= end || *p != '{')
        return false;
    p++;
    for (;;) {
        const char *member = p = skip_ws(p, end);
        if (p >= end || *p != '"' || (p = skip_string(p, end)) == NULL)
            return false;
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return false;
        const char *value = p = skip_ws(p + 1, end);
        if ((p = skip_value(p, end)) == NULL)
            return false;
        if (*value == '[' && value < mid && mid < p) {
            const char *inner = middle_element_comma(value, p, mid);
            if (inner != NULL) {
                *s = (struct split){ inner, member, value };
                return true;
            }
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ',')
            return s->comma != NULL;
        if (!nearer(p, s->comma, mid))
            return true;
        s->comma = p;
        p++;
    }
}

/* The rows of a cut matrix that one half read into numbers (packed is then true). */
struct packed_rows {
    struct cell_run c;
    size_t rows, cols;
    const char *after; /* past them: the cut, or past the array's ']' */
    bool packed;
};

/*
 * The rows of the cut array from r->p (after its '[' or the cut) into numbers, up to
 * stop (NULL: the array's end), with as many empty rows appended to array; the reader
 * is moved past them. False, nothing changed, when they are not rows of numbers (the
 * half then reads them as nodes); with no memory for the empty rows, pr->packed is
 * set but the reader is not moved, and the halves are given up.
 */
static bool pack_cut_rows(struct reader *r, json_t *array, const char *stop, struct packed_rows *pr)
{
    const char *p = skip_ws(r->p, r->end);
    if (!may_pack(r) || p >= r->end || *p != '[')
        return false;
    pr->after = scan_number_rows(p, r->end, stop, &pr->c, &pr->rows, &pr->cols);
    if (pr->after == NULL) {
        free(pr->c.cells);
        memset(pr, 0, sizeof *pr);
        return false;
    }
    pr->packed = true;
    if (!add_empty_rows(array, pr->rows))
        return false;
    r->p = pr->after;
    return true;
}

/* The first half: members up to the cut; with an array cut, also the split member,
 * its array (*split_array, borrowed) holding the elements before the cut (empty rows
 * when `rows` packed them). */
static bool read_first_half(struct reader *r, json_t *object, const struct split *s,
                            json_t **split_array, struct packed_rows *rows)
{
    skip_space(r);
    r->p++; /* '{', as find_split saw */
    if (!read_members(r, object, s->array != NULL ? s->member : s->comma))
        return false;
    if (s->array == NULL)
        return true;
    struct strbuf key;
    bool ok = read_key(r, object, &key);
    json_t *array = NULL;
    if (ok) {
        skip_space(r);
        ok = r->p == s->array && enter(r) && (array = json_array()) != NULL;
    }
    if (ok) {
        r->p++; /* '[' */
        if (!pack_cut_rows(r, array, s->comma, rows))
            ok = !rows->packed && read_elements(r, array, s->comma);
        ok = ok && json_object_set_new_nocheck(object, key.data, json_incref(array)) == 0;
        *split_array = array; /* the object's reference keeps it */
    }
    json_decref(array);
    strbuf_free(&key);
    return ok;
}

/* The second half: with an array cut, the rest of that array (read into `rest`),
 * then the members after it; the object's end; nothing but space after. */
static bool read_second_half(struct reader *r, json_t *object, json_t *rest,
                             const struct split *s, struct packed_rows *rows)
{
    if (s->array != NULL) {
        r->depth = 2;
        if (!pack_cut_rows(r, rest, NULL, rows) && (rows->packed || !read_elements(r, rest, NULL)))
            return false;
        r->depth = 1;
        enum after_item next = after_item(r, NULL, '}'); /* the split member's end */
        if (next == CONTAINER_BAD || (next == ANOTHER_ITEM && !read_members(r, object, NULL)))
            return false;
    } else if (!read_members(r, object, NULL)) {
        return false;
    }
    skip_space(r);
    return r->p == r->end;
}

/* The second half on a thread of its own, its nodes in an arena of its own. */
struct half_read {
    const char *text, *end;
    const struct split *split;
    struct api_json_arena arena;
    bool use_arena, pack, ok;
    json_t *object, *rest;
    struct packed_rows rows; /* of rest */
};

static void *run_second_half(void *arg)
{
    struct half_read *h = arg;
    struct api_json_error err;
    memset(&err, 0, sizeof err);
    struct reader r = { h->text, h->split->comma + 1, h->end, 1, &err, h->pack };

    if (h->use_arena)
        api_json_arena_begin(&h->arena);
    h->object = json_object();
    h->rest = json_array();
    h->ok = h->object != NULL && h->rest != NULL &&
            read_second_half(&r, h->object, h->rest, h->split, &h->rows);
    if (h->use_arena)
        api_json_arena_leave(&h->arena);
    return NULL;
}

/*
 * The two halves as one object, in document order; NULL when a key is in both (the
 * one-thread reader then reports it where it first repeats). Takes `first`.
 */
static json_t *join_halves(json_t *first, json_t *split_array, const struct half_read *second)
{
    const char *key;
    json_t *value;
    if (split_array != NULL && json_array_extend(split_array, second->rest) != 0) {
        json_decref(first);
        return NULL;
    }
    json_object_foreach(second->object, key, value) {
        if (json_object_get(first, key) != NULL || json_object_set(first, key, value) != 0) {
            json_decref(first);
            return NULL;
        }
    }
    return first;
}

/*
 * The cut matrix's two runs of rows as one record filed with the arena (they lie
 * either side of the cut: `array`'s text runs from its '[' to past the second run),
 * or false when they cannot be: a half did not read (read_ok false), one half packed
 * and the other not (a row of something else, a different length), no memory.
 * Takes both runs' cells, whatever the outcome.
 */
static bool join_packed_rows(bool read_ok, const json_t *array, const char *open,
                             struct packed_rows *first, struct packed_rows *second)
{
    bool ok = read_ok && first->packed && second->packed && first->cols == second->cols;
    size_t rows = first->rows + second->rows, cols = first->cols;
    double *cells = NULL;
    if (ok && rows <= SIZE_MAX / sizeof *cells / cols)
        cells = realloc(first->c.cells, rows * cols * sizeof *cells);
    if (cells != NULL) {
        first->c.cells = cells;
        memcpy(cells + first->rows * cols, second->c.cells, second->rows * cols * sizeof *cells);
        struct api_json_packed rec = { array, open, (size_t)(second->after - open), cells,
                                       rows, cols, NULL };
        if (api_json_packed_add(&rec)) {
            atomic_fetch_add_explicit(&matrices_packed, 1, memory_order_relaxed);
            first->c.cells = NULL; /* the arena's now */
        } else {
            cells = NULL;
        }
    }
    free(first->c.cells);
    free(second->c.cells);
    return cells != NULL;
}

/*
 * The body as an object read in two halves at once, or NULL when that cannot be done
 * or either half found something wrong: the caller then reads it from the start, so
 * errors are reported exactly as one reader finds them.
 */
static json_t *read_object_halves(const char *text, size_t len, bool pack)
{
    struct split s;
    if (!find_split(text, text + len, &s))
        return NULL;
    struct half_read second = { .text = text, .end = text + len, .split = &s,
                                .use_arena = api_json_arena_current() != NULL, .pack = pack };
    pthread_t t;
    if (pthread_create(&t, NULL, run_second_half, &second) != 0)
        return NULL;

    struct api_json_error err;
    memset(&err, 0, sizeof err);
    struct reader r = { text, text, text + len, 1, &err, pack };
    json_t *first = json_object(), *split_array = NULL;
    struct packed_rows first_rows = { { NULL, 0, 0 }, 0, 0, NULL, false };
    bool ok = first != NULL && read_first_half(&r, first, &s, &split_array, &first_rows);

    pthread_join(t, NULL);
    if (second.use_arena)
        api_json_arena_merge(api_json_arena_current(), &second.arena);
    /* A matrix cut in two is kept whole: packed on both sides, or on neither. */
    if (first_rows.packed || second.rows.packed)
        ok = join_packed_rows(ok && second.ok, split_array, s.array, &first_rows, &second.rows);
    json_t *whole = NULL;
    if (ok && second.ok)
        whole = join_halves(first, split_array, &second);
    else
        json_decref(first);
    json_decref(second.object);
    json_decref(second.rest);
    return whole;
}

static atomic_ulong halves_read;

unsigned long api_json_halves_read(void)
{
    return atomic_load(&halves_read);
}

/* The whole body as one value, read by one thread. */
static json_t *read_document(const char *text, size_t len, struct api_json_error *err, bool pack)
{
    memset(err, 0, sizeof *err);
    struct reader r = { text, text, text + len, 0, err, pack };
    json_t *v = read_value(&r);
    if (v == NULL)
        return NULL;
    skip_space(&r);
    if (r.p < r.end) {
        fail_at1(&r, r.p, API_JSON_N("extra data after the JSON value: {1}"), what_is_here(&r));
        json_decref(v);
        return NULL;
    }
    return v;
}

static json_t *read_halves(const char *text, size_t len, struct api_json_error *err, bool pack)
{
    json_t *v = read_object_halves(text, len, pack);
    if (v == NULL)
        return read_document(text, len, err, pack);
    atomic_fetch_add(&halves_read, 1);
    memset(err, 0, sizeof *err);
    return v;
}

json_t *api_json_read_halves(const char *text, size_t len, struct api_json_error *err)
{
    return read_halves(text, len, err, false);
}

json_t *api_json_read_body_halves(const char *text, size_t len, struct api_json_error *err)
{
    return read_halves(text, len, err, true);
}

json_t *api_json_read_body(const char *text, size_t len, struct api_json_error *err,
                           unsigned threads)
{
    if (threads >= 2 && len >= API_JSON_SPLIT_BYTES)
        return read_halves(text, len, err, true);
    return read_document(text, len, err, true);
}

json_t *api_json_read(const char *text, size_t len, struct api_json_error *err)
{
    return read_document(text, len, err, false);
}

/*
 * api/json/write.c — the streaming JSON writer (see write.h for the contract).
 */
/* madvise and MADV_HUGEPAGE are not POSIX. */
#define _DEFAULT_SOURCE
#include "api/json/write.h"

#include <stdlib.h>
#include <string.h>

#include "api/json/numfmt.h"
#include "api/json/utf8.h"
#include "core/memory.h"

void jw_init(struct jw *w, int round)
{
    memset(w, 0, sizeof *w);
    w->round = round;
    w->first[0] = true;
}

void jw_deinit(struct jw *w)
{
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
    api_segments_free(w->done);
    w->done = NULL;
    w->done_cap = 0;
}

/* Room in w->done for `more` pieces; false (nothing changed) when memory runs out. */
static bool piece_room(struct jw *w, size_t more)
{
    size_t n = w->done != NULL ? w->done->n : 0;
    if (n + more <= w->done_cap)
        return true;
    size_t cap = w->done_cap > 0 ? w->done_cap * 2 : 16;
    while (cap < n + more)
        cap *= 2;
    struct api_segments *grown = realloc(w->done, sizeof *grown + cap * sizeof grown->seg[0]);
    if (grown == NULL)
        return false;
    if (w->done == NULL) { /* a fresh list: no pieces, no owner (segments.h) */
        grown->n = grown->total = grown->owner_bytes = 0;
        grown->owner = NULL;
        grown->owner_free = NULL;
    }
    w->done = grown;
    w->done_cap = cap;
    return true;
}

/* Appends base[off, off + len) to the pieces (room made by piece_room); base is now theirs. */
static void piece_push(struct jw *w, char *base, size_t off, size_t len)
{
    struct api_segment *s = &w->done->seg[w->done->n++];
    s->base = base;
    s->data = base + off;
    s->len = len;
    w->done->total += len;
}

/* The current buffer becomes the last piece (or is freed when empty); buf is NULL after. */
static void close_piece(struct jw *w)
{
    if (w->len > 0)
        piece_push(w, w->buf, 0, w->len);
    else
        free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

/* The pieces and the current buffer joined into one NUL-terminated buffer; NULL on failure. */
static char *join_pieces(struct jw *w, size_t *len)
{
    size_t total = w->done->total + w->len;
    char *out = malloc(total + 1);
    if (out != NULL) {
        size_t at = 0;
        for (size_t i = 0; i < w->done->n; i++) {
            memcpy(out + at, w->done->seg[i].data, w->done->seg[i].len);
            at += w->done->seg[i].len;
        }
        if (w->len > 0)
            memcpy(out + at, w->buf, w->len);
        out[total] = '\0';
        *len = total;
    }
    jw_deinit(w);
    return out;
}

struct api_segments *jw_take_segments(struct jw *w)
{
    if (w->failed || w->done == NULL || !piece_room(w, 1))
        return NULL;
    close_piece(w);
    struct api_segments *out = w->done;
    w->done = NULL;
    w->done_cap = 0;
    return out;
}

char *jw_take(struct jw *w, size_t *len)
{
    if (w->failed || (w->buf == NULL && w->done == NULL)) {
        jw_deinit(w);
        return NULL;
    }
    if (w->done != NULL)
        return join_pieces(w, len);
    char *out = w->buf;
    *len = w->len;
    w->buf = NULL;
    w->len = w->cap = 0;
    return out;
}

/* jw_reserve and jw_presize give an answer past 32 MiB (xl's is 96 MB) the huge-page
 * hint of core/memory.h. */
bool jw_reserve(struct jw *w, size_t extra)
{
    if (w->failed)
        return false;
    if (extra >= (size_t)-1 - w->len) {
        w->failed = true;
        return false;
    }
    size_t need = w->len + extra + 1; /* + the NUL kept after the text */
    if (need <= w->cap)
        return true;
    /* Geometric growth keeps appends amortized O(1) for responses of any size. */
    size_t cap = w->cap ? w->cap : w->cap_hint > 256 ? w->cap_hint : 256;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    char *grown = realloc(w->buf, cap);
    if (grown == NULL) {
        w->failed = true;
        return false;
    }
    w->buf = grown;
    w->cap = cap;
    attn_hint_huge_pages(grown, cap);
    return true;
}

void jw_presize(struct jw *w, size_t bytes)
{
    if (w->failed || bytes <= w->cap)
        return;
    char *grown = realloc(w->buf, bytes);
    if (grown != NULL) {
        w->buf = grown;
        w->cap = bytes;
        attn_hint_huge_pages(grown, bytes);
    }
}

/*
 * The fast path of jw_reserve, inlined where the writer appends a few bytes (a small
 * answer is mostly keys, short strings and brackets, one reservation each): only a
 * full buffer or a failure calls out.
 */
static inline bool room(struct jw *w, size_t extra)
{
    return (!w->failed && w->cap - w->len > extra) || jw_reserve(w, extra);
}

static inline void put(struct jw *w, const char *s, size_t n)
{
    if (!room(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static inline void put_char(struct jw *w, char c)
{
    if (!room(w, 1))
        return;
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
}

/* The separator owed before a value: none after a key or first in its container. */
static inline void before_value(struct jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (!w->first[w->depth])
        put_char(w, ',');
    w->first[w->depth] = false;
}

static void open_container(struct jw *w, char c)
{
    before_value(w);
    put_char(w, c);
    if (w->depth + 1 >= JW_MAX_DEPTH) {
        w->failed = true; /* a programmer error: attnd's documents are shallow */
        return;
    }
    w->first[++w->depth] = true;
}

static void close_container(struct jw *w, char c)
{
    if (w->depth > 0)
        w->depth--;
    put_char(w, c);
}

void jw_object_begin(struct jw *w) { open_container(w, '{'); }
void jw_object_end(struct jw *w) { close_container(w, '}'); }
void jw_array_begin(struct jw *w) { open_container(w, '['); }
void jw_array_end(struct jw *w) { close_container(w, ']'); }

/*
 * A byte that goes out as it is inside a JSON string: ASCII from the space up but
 * the quote and the backslash. Any other needs a look (an escape, a UTF-8 check).
 */
static inline bool plain_byte(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The most bytes put_escaped writes for one input byte ("\u0001"). */
#define JW_ESCAPE_GROWTH 6

/*
 * Writes the escape of byte c (a byte of ill-formed UTF-8 when c >= 0x80) at out;
 * returns the bytes written.
 */
static size_t write_escape(unsigned char c, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char short_form = c == '"' ? '"' : c == '\\' ? '\\' : c == '\n' ? 'n'
                    : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
    out[0] = '\\';
    if (short_form != 0) {
        out[1] = short_form;
        return 2;
    }
    if (c >= 0x80) {
        memcpy(out + 1, "ufffd", 5);
        return 6;
    }
    memcpy(out + 1, "u00", 3);
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
}

/* Input bytes escaped per reservation: bounds what a long string reserves ahead. */
#define JW_ESCAPE_SLICE 4096

/*
 * Writes s as a JSON string body: quotes, backslashes and control bytes escaped.
 * Echoed client text (a header, a path cut at 100 bytes) may not be UTF-8, and
 * JSON text must be: each byte of an ill-formed sequence becomes U+FFFD. One
 * reservation covers the worst case of a slice, and runs of plain bytes are copied
 * whole: a small answer is mostly keys and short strings.
 */
static void put_escaped(struct jw *w, const char *s, size_t n)
{
    const unsigned char *in = (const unsigned char *)s, *end = in + n;
    put_char(w, '"');
    while (in < end) {
        size_t slice = (size_t)(end - in) < JW_ESCAPE_SLICE ? (size_t)(end - in) : JW_ESCAPE_SLICE;
        /* + 3: a UTF-8 sequence that starts in the slice may end past it */
        if (!room(w, slice * JW_ESCAPE_GROWTH + 3))
            return;
        const unsigned char *stop = in + slice;
        char *out = w->buf + w->len;
        while (in < stop) {
            const unsigned char *run = in;
            while (in < stop && plain_byte(*in))
                in++;
            memcpy(out, run, (size_t)(in - run));
            out += in - run;
            if (in == stop)
                break;
            size_t len = *in >= 0x80 ? api_utf8_len(in, (size_t)(end - in)) : 0;
            if (len > 0) { /* well-formed UTF-8 goes out as it is */
                memcpy(out, in, len);
                out += len;
                in += len;
            } else {
                out += write_escape(*in++, out);
            }
        }
        *out = '\0';
        w->len = (size_t)(out - w->buf);
    }
    put_char(w, '"');
}

void jw_key(struct jw *w, const char *key)
{
    before_value(w);
    put_escaped(w, key, strlen(key));
    put_char(w, ':');
    w->after_key = true;
}

void jw_key_text(struct jw *w, const char *text, size_t n)
{
    before_value(w);
    put(w, text, n);
    w->after_key = true;
}

void jw_string(struct jw *w, const char *s) { jw_string_n(w, s, strlen(s)); }

void jw_string_n(struct jw *w, const char *s, size_t n)
{
    before_value(w);
    put_escaped(w, s, n);
}

/* Formats straight into the buffer: no temporary per number. */
static void put_number(struct jw *w, double x)
{
    if (!jw_reserve(w, API_NUMBER_ROOM))
        return;
    w->len += api_format_row(&x, 1, w->round, w->buf + w->len);
    w->buf[w->len] = '\0';
}

void jw_double(struct jw *w, double x)
{
    before_value(w);
    put_number(w, x);
}

void jw_int(struct jw *w, long long x)
{
    /* By hand, back to front: snprintf's format parsing was a third of a small
     * answer's time (shapes and step numbers are all integers). */
    char tmp[24], *p = tmp + sizeof tmp;
    unsigned long long u = x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (x < 0)
        *--p = '-';
    before_value(w);
    put(w, p, (size_t)(tmp + sizeof tmp - p));
}

void jw_bool(struct jw *w, bool b)
{
    before_value(w);
    put(w, b ? "true" : "false", b ? 4 : 5);
}

void jw_null(struct jw *w)
{
    before_value(w);
    put(w, "null", 4);
}

void jw_double_array(struct jw *w, const double *xs, size_t n)
{
    jw_array_begin(w);
    /* One reservation and one call for the whole row: the hot loop of every response. */
    if (n > 0 && n < ((size_t)-1 - 2) / API_NUMBER_ROOM &&
        jw_reserve(w, n * API_NUMBER_ROOM + 2)) {
        w->len += api_format_row(xs, n, w->round, w->buf + w->len);
        w->buf[w->len] = '\0';
    } else if (n > 0) {
        w->failed = true; /* a row too long to reserve: jw_reserve says why */
    }
    w->first[w->depth] = n == 0;
    jw_array_end(w);
}

void jw_raw(struct jw *w, const char *json, size_t n)
{
    before_value(w);
    put(w, json, n);
}

void jw_end_line(struct jw *w)
{
    put_char(w, '\n');
}

size_t jw_offset(const struct jw *w)
{
    return (w->done != NULL ? w->done->total : 0) + w->len;
}

/* The overlap [*lo, *hi) of [from, to) with the text [at, at + len); false if empty. */
static bool overlap(size_t at, size_t len, size_t from, size_t to, size_t *lo, size_t *hi)
{
    *lo = from > at ? from : at;
    *hi = to < at + len ? to : at + len;
    return *lo < *hi;
}

/* Copies the overlap of [from, to) with the text [at, at + len) found at src to out. */
static char *copy_overlap(char *out, const char *src, size_t at, size_t len, size_t from,
                          size_t to)
{
    size_t lo, hi;
    if (!overlap(at, len, from, to, &lo, &hi))
        return out;
    memcpy(out, src + (lo - at), hi - lo);
    return out + (hi - lo);
}

/*
 * From this many bytes, a repeat in an answer sent in pieces points at the text it
 * repeats instead of copying it: large's masked step is 5.5 MB of scaled's text, whose
 * copy was the writer's one single-threaded stretch. Below, copying is cheaper than a
 * piece more to send.
 */
#define JW_REPEAT_BORROW ((size_t)64 * 1024)

/*
 * jw_repeat without a copy: the current buffer becomes a piece, so all the text so far
 * lies in pieces that live as long as the answer, and [from, to) is pushed again as
 * borrowed pieces (no base: nothing to free). False (nothing changed) when the list of
 * pieces cannot grow.
 */
static bool repeat_borrowed(struct jw *w, size_t from, size_t to)
{
    size_t n = w->done != NULL ? w->done->n : 0;
    if (!piece_room(w, n + 2)) /* the current buffer, and at most every piece again */
        return false;
    /* The buffer may have been sized for the whole answer (one thread writes it all):
     * its unused room goes back to the heap and becomes the next buffer's size, which
     * would otherwise start small and grow by copies. */
    size_t rest = w->cap > w->len + 1 ? w->cap - w->len - 1 : 0;
    if (w->buf != NULL && w->len > 0 && rest > 4096) {
        char *shrunk = realloc(w->buf, w->len + 1);
        if (shrunk != NULL) {
            w->buf = shrunk;
            w->cap = w->len + 1;
        }
    }
    close_piece(w);
    if (rest > w->cap_hint)
        w->cap_hint = rest;
    size_t pieces = w->done->n, at = 0;
    for (size_t i = 0; i < pieces; i++) {
        const char *data = w->done->seg[i].data;
        size_t len = w->done->seg[i].len, lo, hi;
        if (overlap(at, len, from, to, &lo, &hi)) {
            struct api_segment *s = &w->done->seg[w->done->n++];
            s->base = NULL;
            s->data = data + (lo - at);
            s->len = hi - lo;
            w->done->total += hi - lo;
        }
        at += len;
    }
    return true;
}

void jw_repeat(struct jw *w, size_t from, size_t to)
{
    if (w->failed || from > to || to > jw_offset(w)) {
        w->failed = true; /* a programmer error: marks from another writer */
        return;
    }
    before_value(w);
    if (w->failed)
        return;
    if (w->may_segment && to - from >= JW_REPEAT_BORROW && repeat_borrowed(w, from, to))
        return;
    if (!room(w, to - from))
        return;
    /* Offsets, not pointers, until room() is done: it may move the buffer. The copy
     * lands after the text it copies from, so the two never overlap. */
    char *out = w->buf + w->len;
    size_t at = 0;
    for (size_t i = 0; w->done != NULL && i < w->done->n; i++) {
        const struct api_segment *seg = &w->done->seg[i];
        out = copy_overlap(out, seg->data, at, seg->len, from, to);
        at += seg->len;
    }
    out = copy_overlap(out, w->buf, at, w->len, from, to);
    *out = '\0';
    w->len = (size_t)(out - w->buf);
}

void jw_adopt(struct jw *w, struct jw *other, size_t skip)
{
    size_t n = other->len > skip ? other->len - skip : 0;
    if (!w->may_segment || w->failed || other->buf == NULL || !piece_room(w, 2)) {
        jw_raw(w, other->buf != NULL ? other->buf + skip : "", n);
        jw_deinit(other);
        return;
    }
    before_value(w);
    if (w->failed) { /* the comma could not be written */
        jw_deinit(other);
        return;
    }
    close_piece(w);
    piece_push(w, other->buf, skip, n);
    w->cap_hint = n + 64; /* the next buffer is most likely as large as this piece */
    other->buf = NULL;
    other->len = other->cap = 0;
}

/*
 * api/json/write.h — a streaming JSON writer into one growing buffer.
 *
 * attnd writes every response with this, not with jansson trees and json_dumps:
 * a response can hold millions of numbers, and building a node per number then
 * printing it with 17 digits is both slow and wrong for people (0.1 would read
 * 0.10000000000000001). Numbers go through api_format_double (shortest round
 * trip), optionally rounded first as numpy.round does.
 *
 * Commas are the writer's job: call jw_key before each member's value, and values
 * one after another inside arrays. Out of memory is sticky: every later call is a
 * no-op, and jw_take returns NULL, so callers check once at the end.
 *
 * Not here: parsing, validation, HTTP.
 */
#ifndef API_JSONW_H
#define API_JSONW_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/segments.h"

#define JW_MAX_DEPTH 32

struct jw {
    char *buf;         /* owned; NUL-terminated whenever not failed */
    size_t len, cap;
    /* Text before buf, in pieces taken over by jw_adopt; owned. */
    struct api_segments *done;
    size_t done_cap;   /* pieces done has room for */
    size_t cap_hint;   /* the first capacity of a buffer started after jw_adopt or a
                          borrowed jw_repeat */
    bool may_segment;  /* jw_adopt may take pieces over (else it copies) */
    bool failed;       /* an allocation failed: the text is incomplete */
    int round;         /* decimals for every double (0..15), or -1 for shortest */
    unsigned depth;
    bool after_key;    /* the next value completes a member */
    bool first[JW_MAX_DEPTH]; /* nothing written yet in the container at this depth */
};

/* Starts an empty document; round is -1 or 0..15. No allocation until the first write. */
void jw_init(struct jw *w, int round);
/* Frees the buffer (if not taken). Safe twice. */
void jw_deinit(struct jw *w);
/*
 * Hands the text to the caller (free() it), NUL-terminated, joined into one buffer
 * if it is in pieces; NULL if anything failed.
 */
char *jw_take(struct jw *w, size_t *len);
/*
 * Hands the text over in pieces (api_segments_free them), or NULL when it is not in
 * pieces (then take it with jw_take) or anything failed (then jw_take says NULL too).
 */
struct api_segments *jw_take_segments(struct jw *w);
/*
 * Appends other's text from byte `skip` on as the next value (a comma first when one
 * is owed). With w->may_segment, other's buffer is taken over as a piece of w's text
 * instead of being copied; otherwise, or when memory for the list runs out, copied.
 * Either way other is left empty (deinit it as usual). other must not have failed.
 */
void jw_adopt(struct jw *w, struct jw *other, size_t skip);
/* Makes room for `extra` more bytes; failing sets w->failed like any write. */
bool jw_reserve(struct jw *w, size_t extra);
/* A capacity hint for when the caller knows roughly how much comes; failure is harmless. */
void jw_presize(struct jw *w, size_t bytes);

void jw_object_begin(struct jw *w);
void jw_object_end(struct jw *w);
void jw_array_begin(struct jw *w);
void jw_array_end(struct jw *w);
/* A member name; the next call writes its value. */
void jw_key(struct jw *w, const char *key);
/*
 * The same for a name that is a string literal needing no escape (attnd's own
 * names): its quoted text and the colon are put together at compile time, so it is
 * one copy. Most of a small answer is such names. A literal that needs an escape
 * does not belong here.
 */
#define JW_KEY(w, literal) jw_key_text((w), "\"" literal "\":", sizeof(literal) + 2)
/* JW_KEY's worker: text is the name quoted, with the colon, n bytes. */
void jw_key_text(struct jw *w, const char *text, size_t n);

/* A string, escaped; bytes that are not well-formed UTF-8 are written as U+FFFD. */
void jw_string(struct jw *w, const char *s);
void jw_string_n(struct jw *w, const char *s, size_t n);
/* A double, rounded when w->round >= 0; a non-finite value is written as null. */
void jw_double(struct jw *w, double x);
void jw_int(struct jw *w, long long x);
void jw_bool(struct jw *w, bool b);
void jw_null(struct jw *w);
/* n doubles as one JSON array. */
void jw_double_array(struct jw *w, const double *xs, size_t n);
/*
 * Ends the document with a newline (after its last value; no value follows), so that a
 * shell prompt printed after `curl` starts on a line of its own.
 */
void jw_end_line(struct jw *w);
/* A pre-serialized JSON value, written as it is. */
void jw_raw(struct jw *w, const char *json, size_t n);

/* How many bytes of text w holds so far, pieces included: a mark for jw_repeat. */
size_t jw_offset(const struct jw *w);
/*
 * Writes again, as the next value (a comma first when one is owed), the text w wrote
 * between two of its own marks [from, to): a value whose `from` was taken where no
 * comma was owed (right after jw_key, say). A copy, whichever pieces the text lies
 * in: much cheaper than formatting the same numbers twice; in an answer sent in
 * pieces (may_segment), a long text is not even copied but sent again from where it
 * lies. A mark past the text fails w.
 */
void jw_repeat(struct jw *w, size_t from, size_t to);

#endif

/*
 * api/json/read.h — a strict JSON reader (RFC 8259) that builds jansson values.
 *
 * Why not json_loadb: a request is mostly numbers, and jansson reads them through a
 * character stream, one buffer append and one locale-aware strtod round trip at a
 * time: the largest part of a medium request's time (docs/performance.md). This
 * reader scans the bytes directly and hands jansson finished values (json_real,
 * json_array_append_new, ...), so every reader in api/request/ keeps working on
 * jansson trees.
 *
 * Strict: one value, nothing after it but white space; duplicate keys refused;
 * strings valid UTF-8 without raw control characters, escapes checked (\u0000
 * refused, surrogates paired); numbers by the JSON grammar, a number that is not
 * finite as a double refused; nesting at most API_JSON_MAX_DEPTH deep.
 *
 * Not here: what the fields mean (request/fields.c and the endpoints), HTTP.
 */
#ifndef API_JSON_READ_H
#define API_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define API_JSON_MAX_DEPTH 512

/*
 * Marks a sentence the reader says (a template with numbered holes, "{1}", as
 * i18n/holes.h fills them) for the message catalogue (api/i18n/messages_en.c), so that
 * whoever reports the error can say it in the request's language. Does nothing.
 */
#define API_JSON_N(msgid) msgid

/*
 * One hole of an error's sentence: a phrase (catalogued, e.g. "byte {1}" or "the end
 * of the body"; "{1}" for the data alone) whose own hole the data fills.
 */
struct api_json_hole {
    const char *phrase;
    char data[64];
};

struct api_json_error {
    bool no_memory;  /* an allocation failed: not the body's fault */
    bool out_of_range; /* a number beyond a double's range (1e400): not a typo in the text */
    char text[160];  /* what is wrong, in English, e.g. "duplicate object key \"q\"" */
    /* text in parts another language can say: the sentence (API_JSON_N) with its holes
       {1}, {2} unfilled, and what fills them; text is what, filled in English */
    const char *what;
    struct api_json_hole holes[2];
    unsigned n_holes;
    size_t line;     /* 1-based line of the offending byte */
    size_t column;   /* 1-based column, in bytes */
    size_t position; /* 0-based byte offset */
};

/*
 * Reads the whole body as one JSON value. Returns a new reference (json_decref it),
 * or NULL with *err describing the first problem.
 */
json_t *api_json_read(const char *text, size_t len, struct api_json_error *err);

/* Bodies from this size up may be read in two halves at once (smaller ones read in
 * less time than a thread takes to start and join). */
#define API_JSON_SPLIT_BYTES ((size_t)128 * 1024)

/*
 * A request body, allowed `threads` threads, whose matrices go to api_read_matrix
 * (api/request/fields.h). With two threads, a body of API_JSON_SPLIT_BYTES or more that is
 * an object is read as two runs of its members on two threads, joined in document
 * order; the value, or the error, is what one thread finds. Nodes are allocated as
 * api_json_read's would be (the calling thread's arena scope, if any, owns them all).
 * Inside an arena scope, an array that is a matrix of numbers (rows
 * of numbers, all of one length) is read straight into numbers, filed with the arena
 * (api_json_packed_add), and stands in the document as an array of as many empty
 * rows. A number there costs its conversion and eight bytes, where a node costs
 * about as much time again as the conversion (jansson's node, the array's table,
 * and the walk that reads it back) and four or five times the memory. Anything else,
 * including every matrix that is refused, is read as api_json_read reads it; what is
 * accepted and every error message are the same. The rule that comes with it: a
 * value that may be a matrix of numbers is read with api_read_matrix, which finds
 * the numbers (api_json_packed_find); any other reader sees its rows as empty
 * arrays, which is enough to refuse a matrix where names or labels belong.
 */
json_t *api_json_read_body(const char *text, size_t len, struct api_json_error *err,
                           unsigned threads);

#endif

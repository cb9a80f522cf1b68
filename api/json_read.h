/*
 * api/json_read.h — a strict JSON reader (RFC 8259) that builds jansson values.
 *
 * Why not json_loadb: a request is mostly numbers, and jansson reads them through a
 * character stream, one buffer append and one locale-aware strtod round trip at a
 * time, about 500 ns a number on this project's machines: the largest part of a
 * medium request's time. This reader scans the bytes directly and hands jansson
 * finished values (json_real, json_array_append_new, ...), so every reader of
 * api/fields.h keeps working on jansson trees.
 *
 * Strict: one value, nothing after it but white space; duplicate keys refused;
 * strings valid UTF-8 without raw control characters, escapes checked (\u0000
 * refused, surrogates paired); numbers by the JSON grammar, a number that is not
 * finite as a double refused; nesting at most API_JSON_MAX_DEPTH deep.
 *
 * Not here: what the fields mean (fields.c and the endpoints), HTTP.
 */
#ifndef API_JSON_READ_H
#define API_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define API_JSON_MAX_DEPTH 512

struct api_json_error {
    bool no_memory;  /* an allocation failed: not the body's fault */
    char text[160];  /* what is wrong, e.g. "duplicate object key \"q\"" */
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
 * less time than a thread takes to start and join, about 0.05 ms). */
#define API_JSON_SPLIT_BYTES ((size_t)128 * 1024)

/*
 * The same, allowed `threads` threads: a body of API_JSON_SPLIT_BYTES or more that is
 * an object is read as two runs of its members on two threads, joined in document
 * order. The value, or the error, is exactly what api_json_read gives. Nodes are
 * allocated as api_json_read's would be (the calling thread's arena scope, if any,
 * owns them all).
 */
json_t *api_json_read_threads(const char *text, size_t len, struct api_json_error *err,
                              unsigned threads);

/* api_json_read_threads on two threads whatever the body's size (tests, fuzzing). */
json_t *api_json_read_halves(const char *text, size_t len, struct api_json_error *err);

/* How many bodies were read in two halves so far (for tests). */
unsigned long api_json_halves_read(void);

#endif

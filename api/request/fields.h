/*
 * api/request/fields.h — reading request fields out of a jansson document, strictly.
 *
 * Each reader either fills its output or fills a struct api_error that names the
 * culprit by JSON pointer and, where the seeds list a learner's pitfall, hints at
 * the fix. Readers are shared by every endpoint so that one mistake gets the same
 * words everywhere.
 *
 * Ownership: jansson values are borrowed. Matrices are read by request/matrix.h, the
 * body by request/body.h.
 *
 * Not here: which fields an endpoint has (that is each endpoint's table), math.
 */
#ifndef API_FIELDS_H
#define API_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "core/matrix.h"

/* A known field of a request object, with what it means (used in hints). */
struct api_field {
    const char *name;
    const char *meaning; /* e.g. "the queries, (n_q, d_k)" */
};

/*
 * Refuses every member of `obj` that is not in known[] at once: unknown-field with
 * errors[] holding each one's pointer (pointer/name; the first API_ERROR_MORE + 1) and a
 * hint naming the known field meant (common aliases such as "keys" for k or "attn_mask"
 * for mask, else a close name, api_close_name), or listing the fields when none is close.
 */
bool api_check_fields(const json_t *obj, const char *pointer, const struct api_field *known,
                      size_t n_known, struct api_error *err);

/*
 * The JSON pointer of member `field` under `prefix` ("/heads/0" + "q"), written into
 * buf (NUL-terminated, cut to size - 1 bytes as snprintf would): every request
 * builds a few, for the messages of errors it may not have.
 */
void api_field_pointer(char *buf, size_t size, const char *prefix, const char *field);
#define API_FIELD_POINTER(buf, prefix, field) api_field_pointer(buf, sizeof buf, prefix, field)

/* The member `name` of obj, or NULL when absent or null (null means absent). */
json_t *api_member(const json_t *obj, const char *name);

/* The known name nearest to `word` (edit distance, ignoring case), from names[]. */
const char *api_nearest_name(const char *word, const char *const *names, size_t n);

/*
 * The nearest of names[] when it is close to `word` (an edit distance of at most
 * max(1, length of word / 3)), else NULL: a "did you mean" that is far off misleads
 * more than a list of the names.
 */
const char *api_close_name(const char *word, const char *const *names, size_t n);

/* A finite number > 0 (scale). */
bool api_read_positive(const json_t *node, const char *pointer, const char *name, double *out,
                       struct api_error *err);

/* An integer in [lo, hi]; an integral real such as 2.0 counts. */
bool api_read_int_range(const json_t *node, const char *pointer, const char *name, long long lo,
                        long long hi, long long *out, struct api_error *err);

/* One of choices[] (a string); *index receives its position. */
bool api_read_choice(const json_t *node, const char *pointer, const char *name,
                     const char *const *choices, size_t n, size_t *index, struct api_error *err);

/* A list of names from names[] (at most 32): bit i of *bits is set when names[i] is listed. */
bool api_read_name_set(const json_t *node, const char *pointer, const char *name,
                       const char *const *names, size_t n, unsigned long *bits,
                       struct api_error *err);

/* An array of strings; the array is borrowed from the document. */
bool api_read_string_list(const json_t *node, const char *pointer, const char *name,
                          struct api_error *err);

/* A short description of a JSON value's type for messages: "a string", "an object", ... */
const char *api_json_kind(const json_t *node);

/* Writes a JSON-pointer-escaped key (~ → ~0, / → ~1) into out. */
void api_pointer_escape(const char *key, char *out, size_t size);

#endif

/*
 * api/json/test_hooks.h — what the tests and fuzzers reach into in json/, and nothing
 * else does: counters of the paths a body took, and switches that force one. Kept out
 * of read.h and matrix_write.h so that no caller in the server takes them for API;
 * `make lint` refuses this header to any file but tests/ and json/'s own.
 */
#ifndef API_JSON_TEST_HOOKS_H
#define API_JSON_TEST_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct api_json_error; /* read.h's; not included, as read.c includes this header */

/* api_json_read_body on two threads whatever the body's size. */
json_t *api_json_read_body_halves(const char *text, size_t len, struct api_json_error *err);

/* api_json_read (every value a node) in two halves whatever the body's size. */
json_t *api_json_read_halves(const char *text, size_t len, struct api_json_error *err);

/* How many bodies were read in two halves so far. */
unsigned long api_json_halves_read(void);

/* How many matrices api_json_read_body read into numbers so far. */
unsigned long api_json_matrices_packed(void);

/* Whether api_json_read_body reads matrices into numbers (by default it does); off,
 * every value is a node, as api_json_read makes it, for tests that compare the two. */
void api_json_packing_set(bool on);

/* How many matrices were split so far, and how many of their pieces were written
 * aside rather than into the answer itself (matrix_write.c). */
unsigned long api_write_splits(void);
unsigned long api_write_pieces_aside(void);

#endif

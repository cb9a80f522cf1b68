/*
 * tests/unit/api_fixture.h — what the api suites share: a request handed to api_handle
 * as the server hands it, its answer read back with jansson, the seeds' bodies, a
 * deterministic stream of test inputs, and the main every api suite runs.
 *
 * Not here: assertions about any one module (each tests/unit/check_<module>.c holds
 * its own); the server (tests/http/ talks to the real binary).
 */
#ifndef TESTS_UNIT_API_FIXTURE_H
#define TESTS_UNIT_API_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/api.h"

/* Seed 000's q, k and v (DESIGN.md's example), and seed 002's one query, unscaled. */
#define SEED000 "\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,0,1,0],[1,1,1,1]],\"v\":[[10,0],[0,10]]"
#define SEED002_ONE "\"q\":[1,0],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1"

/* The limits and readiness of a server started with its defaults. */
struct api_context test_context(void);

/* The answer to one request; the caller frees it with api_response_deinit. */
struct api_response call_full(const struct api_context *ctx, const char *method,
                              const char *path, const char *accept, const char *ctype,
                              const char *body, const struct api_param *params,
                              size_t n_params);

/* call_full with test_context(), no Accept header and application/json. */
struct api_response call(const char *method, const char *path, const char *body);

/* The answer's body as a new jansson value (json_decref it); fails the test if it is
 * not JSON. */
json_t *parse(const struct api_response *res);

/* A number at a path like "weights/1/0" inside doc; fails the test if there is none. */
double num_at(json_t *doc, const char *path);

/* |got - want| <= 1e-12 + 1e-12 |want|, or the test fails naming what. */
void assert_close(double got, double want, const char *what);

/* A deterministic stream of test inputs (splitmix64). */
uint64_t next_random(uint64_t *state);

/* One number token of JSON's grammar, NUL-terminated in out: printed doubles and
 * arbitrary digit strings (which may lie beyond a double: check with strtod). */
void random_number_token(uint64_t *state, char *out, size_t size);

/* Runs s as the server would run api/ (api_global_init first); the process's exit
 * status: EXIT_SUCCESS when every test passed. */
int run_api_suite(Suite *s);

#endif

/*
 * api/request/backward.h — the `backward` object of /v1/attention and /v1/multihead:
 * {"grad_output": dO} or {"seed": s}, exactly one (DESIGN.md, "Backward"). Each endpoint
 * reads dO itself, against its own output's shape.
 */
#ifndef API_REQUEST_BACKWARD_H
#define API_REQUEST_BACKWARD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "core/attention.h"

/*
 * Reads node (at pointer ptr): on success *d_out is grad_output's node (NULL when the
 * seed was sent, then in *seed). A 422 naming the field otherwise: not an object, an
 * unknown field, neither or both, a seed that is not an integer >= 0.
 */
bool api_read_backward_source(const json_t *node, const char *ptr, const json_t **d_out,
                              uint64_t *seed, struct api_error *err);

/*
 * A backward pass that failed with st, as the answer's problem: a gradient not finite is
 * 422 numeric-overflow at /backward with the fix, no memory 503, anything else 500.
 * Returns false, for the caller's `return`.
 */
bool api_backward_failed(enum attn_status st, struct api_error *err);

#endif

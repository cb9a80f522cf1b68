/*
 * api/admit.h — a request asks the server's memory budget before it allocates.
 *
 * Answers wait in memory until their clients read them, and a large request's trace
 * and answer are hundreds of megabytes, so a server that takes every request can be
 * driven past its container's limit by clients that are merely slow. Each handler
 * calls api_admit once the request is parsed and validated (its sizes known, nothing
 * big allocated yet); the server decides (api_context.admit).
 *
 * Not here: the budget itself (the server's), HTTP.
 */
#ifndef API_ADMIT_H
#define API_ADMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "api/problem.h"

/*
 * The working set of a request whose trace takes trace_bytes and whose answer writes
 * `numbers` numbers, body included (its parsed document costs about what the body
 * does). Saturates at SIZE_MAX.
 */
size_t api_working_set(size_t trace_bytes, size_t numbers, size_t body_len);

/* True when the server admits a working set of `bytes`; otherwise err is the 503. */
bool api_admit(const struct api_context *ctx, size_t bytes, struct api_error *err);

/* The 503's words, shared with the server's refusal of a body (api_respond_over_budget). */
void api_error_over_budget(struct api_error *err, size_t bytes);

#endif

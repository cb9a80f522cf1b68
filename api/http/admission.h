/*
 * api/http/admission.h — a request asks the server's memory budget before it allocates.
 *
 * Answers wait in memory until their clients read them, and a large request's trace
 * and answer are hundreds of megabytes, so a server that takes every request can be
 * driven past its container's limit by clients that are merely slow. Each handler
 * calls api_admit once the request is parsed and validated (its sizes known, nothing
 * big allocated yet): first against the one request's limit
 * (api_limits.max_request_bytes, a 422 naming the field whose size drives it), then
 * against the server's budget (api_context.admit, a 503 to retry).
 *
 * The limit is on the sum, not on each matrix (that is --max-cells): a request whose
 * every matrix is within --max-cells can still ask for a trace and an answer of
 * gigabytes, as a 55-byte /v1/multihead with `random` does. A request of its own is
 * always admitted by the budget (server/host/budget.h), so this limit is what bounds it.
 *
 * Not here: the budget itself (the server's), HTTP.
 */
#ifndef API_HTTP_ADMISSION_H
#define API_HTTP_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"

/*
 * What an answer writes besides its numbers, at most: its keys, shapes, the steps' list
 * and words, a page's headers. Without it a small request's estimate was below its
 * answer (a 1 x 1 problem: 504 bytes estimated, 806 written).
 */
#define API_ANSWER_FIXED_BYTES ((size_t)8192)

/*
 * The working set of a request whose trace takes trace_bytes and whose answer writes
 * `numbers` numbers (and API_ANSWER_FIXED_BYTES), body included (its parsed document
 * costs about what the body does). Saturates at SIZE_MAX.
 */
size_t api_working_set(size_t trace_bytes, size_t numbers, size_t body_len);

/*
 * False, with err the 422 limit-exceeded at `pointer` (an absolute JSON pointer: the
 * field whose size drives the working set), when `bytes` passes the request limit.
 */
bool api_within_request_limit(const struct api_limits *limits, size_t bytes,
                              const char *pointer, struct api_error *err);

/*
 * The multiply-adds of one problem's two products, n_q·n_k·(d_k + d_v): what a forward
 * pass costs whether or not its (n_q, n_k) steps are built. Saturates at SIZE_MAX.
 */
size_t api_work_of(size_t n_q, size_t n_k, size_t d_k, size_t d_v);

/* a + b, saturating at SIZE_MAX: work summed over heads or items. */
size_t api_work_add(size_t a, size_t b);

/*
 * False, with err the 422 limit-exceeded at `pointer` (the field whose size drives it),
 * when `work` multiply-adds pass --max-work (limits->max_work; 0: no limit).
 */
bool api_within_work_limit(const struct api_limits *limits, size_t work, const char *pointer,
                           struct api_error *err);

/*
 * True when a working set of `bytes` is within the request limit (else err is the
 * 422 at `pointer`, see api_within_request_limit) and the server admits it (else err
 * is the 503, or deferred when the server wants it run elsewhere: see
 * api_response.deferred).
 */
bool api_admit(const struct api_context *ctx, size_t bytes, const char *pointer,
               struct api_error *err);

/*
 * The 503's words, shared with the server's refusal of a body the memory budget has no
 * room for (api_respond_server_over_budget, http/server_problem.h).
 */
void api_error_over_budget(struct api_error *err, size_t bytes);

#endif

/*
 * api/http/admission.c — the estimate and the refusal (see admission.h).
 */
#include "api/http/admission.h"

#include <stdint.h>

#include "api/json/numfmt.h"

size_t api_working_set(size_t trace_bytes, size_t numbers, size_t body_len)
{
    if (trace_bytes > SIZE_MAX - body_len - API_ANSWER_FIXED_BYTES)
        return SIZE_MAX;
    size_t known = trace_bytes + body_len + API_ANSWER_FIXED_BYTES;
    if (numbers > (SIZE_MAX - known) / API_ANSWER_BYTES_PER_NUMBER)
        return SIZE_MAX;
    return known + numbers * API_ANSWER_BYTES_PER_NUMBER;
}

void api_error_over_budget(struct api_error *err, size_t bytes)
{
    api_error_set(err, API_UNAVAILABLE, "the server's memory budget is taken (answers "
                  "waiting for their clients, requests being computed) and this request "
                  "needs about %.1f MB more", (double)bytes / 1e6);
    api_error_hint(err, "nothing is wrong with the request: retry after the Retry-After "
                   "seconds, or on another replica; the operator sets the budget with "
                   "--max-memory");
}

bool api_within_request_limit(const struct api_limits *limits, size_t bytes,
                              const char *pointer, struct api_error *err)
{
    size_t limit = limits->max_request_bytes;
    if (limit == 0 || bytes <= limit)
        return true;
    api_error_set(err, API_LIMIT_EXCEEDED, "this request would hold about %.1f MB at once "
                  "(its body, every matrix it computes and its answer); this server takes at "
                  "most %.1f MB for one request", (double)bytes / 1e6, (double)limit / 1e6);
    api_error_at(err, "%s", pointer);
    api_error_hint(err, "send fewer rows here, ask for fewer steps with include, or split "
                   "the work over several requests; the operator sets the limit with "
                   "--max-request-bytes");
    return false;
}

size_t api_work_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t api_work_of(size_t n_q, size_t n_k, size_t d_k, size_t d_v)
{
    size_t width = api_work_add(d_k, d_v);
    if (n_q == 0 || n_k == 0 || width == 0)
        return 0;
    if (n_q > SIZE_MAX / n_k || n_q * n_k > SIZE_MAX / width)
        return SIZE_MAX;
    return n_q * n_k * width;
}

bool api_within_work_limit(const struct api_limits *limits, size_t work, const char *pointer,
                           struct api_error *err)
{
    size_t limit = limits->max_work;
    if (limit == 0 || work <= limit)
        return true;
    api_error_set(err, API_LIMIT_EXCEEDED, "this request asks for %.4g multiply-adds "
                  "(n_q·n_k·(d_k + d_v), summed over heads and items); this server does at "
                  "most %.4g for one request", (double)work, (double)limit);
    api_error_at(err, "%s", pointer);
    api_error_hint(err, "send fewer queries or keys, or split the queries over several "
                   "requests; the operator sets the limit with --max-work");
    return false;
}

bool api_admit(const struct api_context *ctx, size_t bytes, const char *pointer,
               struct api_error *err)
{
    if (!api_within_request_limit(&ctx->limits, bytes, pointer, err))
        return false;
    enum api_admission a = ctx->admit != NULL ? ctx->admit(ctx->admit_cls, bytes)
                                               : API_ADMIT_YES;
    if (a == API_ADMIT_YES)
        return true;
    if (a == API_ADMIT_ELSEWHERE) {
        api_error_set(err, API_UNAVAILABLE, "the request runs elsewhere");
        err->deferred = true;
        return false;
    }
    api_error_over_budget(err, bytes);
    return false;
}

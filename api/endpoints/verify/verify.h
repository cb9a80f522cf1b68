/*
 * api/endpoints/verify/verify.h — POST /v1/verify: a kernel's answer to an attention
 * problem judged against the float64 oracle by the rules its authors test with
 * (DESIGN.md, "Verify: a kernel's answer against the oracle"; core/verify.h).
 *
 * Flow: api_verify_parse reads the verdict's own fields (format, candidate, rule,
 * fudge, include) and hands the rest, the problem, to /v1/attention's parse twice: as
 * it is (gold, float64) and with `precision` in the candidate's format (naive, what a
 * plain kernel in that format gives); api_verify_run runs both and judges each tensor
 * the candidate sent; verify/json.c and verify/page.c write the verdict.
 */
#ifndef API_ENDPOINTS_VERIFY_H
#define API_ENDPOINTS_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/endpoints/attention/attention.h"
#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/json/buf.h"
#include "api/json/write.h"
#include "core/precision.h"
#include "core/stream.h"
#include "core/verify.h"

/* What a candidate may hold, in the answer's order. */
enum api_verify_tensor {
    API_VERIFY_OUTPUT = 0,
    API_VERIFY_LSE,
    API_VERIFY_GRAD_Q,
    API_VERIFY_GRAD_K,
    API_VERIFY_GRAD_V,
    API_VERIFY_TENSORS
};

/* "output", "lse", "grad_q", ... */
const char *api_verify_tensor_name(enum api_verify_tensor t);

/* The inputs a kernel reads, checked against the format (warning input-not-in-format). */
#define API_VERIFY_INPUTS 5 /* q, k, v, bias, grad_output */

struct api_verify_not_in_format {
    const char *input;
    size_t row, col;
    double value;
};

/* One attention run's answer: its trace, or its streamed answer. */
struct api_verify_pass {
    struct api_attention_req req;
    struct attn_trace trace;
    struct attn_stream stream;
};

/*
 * One problem's judgement: what it is judged by, the candidate, and what api_verify_judge
 * finds. It owns nothing: the passes are its caller's, and so are the candidate's numbers
 * (/v1's parse reads them into its request; V2 points them into its inputs).
 */
struct api_verify_verdict {
    const struct api_verify_pass *gold;  /* the problem in float64 */
    const struct api_verify_pass *naive; /* with precision {format, float32}; gold for float64 */
    enum attn_format format;             /* the candidate's */
    struct attn_rule rule;
    struct attn_matrix candidate[API_VERIFY_TENSORS]; /* data NULL when not sent */
    bool include_gold;
    /* what the judgement finds */
    struct attn_verify_check checks[API_VERIFY_TENSORS];
    bool inadequate[API_VERIFY_TENSORS]; /* a constant would pass: */
    double constant[API_VERIFY_TENSORS]; /*   this one */
    struct api_verify_not_in_format not_in_format[API_VERIFY_INPUTS];
    size_t n_not_in_format;
    bool pass;
};

/* A POST /v1/verify request: both passes and the verdict, whose candidate it owns. */
struct api_verify_req {
    struct api_verify_pass gold;
    struct api_verify_pass naive;
    bool naive_on;                 /* false for float64: naive is gold */
    struct api_verify_verdict verdict;
};

/* The document into r (the problem's errors as /v1/attention says them). On false r
 * holds nothing. */
bool api_verify_parse(const json_t *doc, const struct api_limits *limits,
                      struct api_verify_req *r, struct api_error *err);
void api_verify_req_deinit(struct api_verify_req *r);

/* The bytes both runs, the candidate and the answer hold at once (admission). */
size_t api_verify_working_set(const struct api_verify_req *r, enum api_format format,
                              size_t body_len);
/* The same for one problem of gold's (and naive's, NULL for float64) request, with
 * `cells` numbers of candidate (and of gold written back with include_gold) and a body
 * of body_len bytes. */
size_t api_verify_problem_bytes(const struct api_attention_req *gold,
                                const struct api_attention_req *naive, size_t cells,
                                bool include_gold, size_t body_len);
const char *api_verify_limit_field(const struct api_verify_req *r);

/* Runs one pass (its trace, or its stream) as /v1/attention runs its request. */
bool api_verify_run_pass(struct api_verify_pass *p, struct api_error *err);

/* Judges every tensor v's candidate holds against its passes, which have run. */
bool api_verify_judge(struct api_verify_verdict *v, struct api_error *err);

/* Runs gold and naive and judges every tensor the candidate holds. */
bool api_verify_run(struct api_verify_req *r, struct api_error *err);

/* A tensor of one run as the rule reads it: n cells, row-major (NULL when absent). */
const double *api_verify_cells(const struct api_verify_pass *p, enum api_verify_tensor t,
                               size_t *n);

/* The shape of tensor t of gold's problem: rank 1 or 2 into dims; the rank. */
int api_verify_shape(const struct api_attention_req *gold, enum api_verify_tensor t,
                     size_t dims[2]);

/* The verdict as /v1/verify answers it: one JSON object (the answer's closing newline is
 * the responder's), or one screen of text. */
void api_verify_write(struct jw *w, const struct api_verify_verdict *v);
void api_verify_text(struct api_buf *b, const struct api_verify_verdict *v);

#endif

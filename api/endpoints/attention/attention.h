/*
 * api/endpoints/attention/attention.h — POST /v1/attention: the request as core needs
 * it, and the steps that parse, admit, run and write it.
 *
 * Flow: api_attention_parse (JSON document → struct api_attention_req, every
 * mistake a struct api_error) → api_attention_run (core's attn_forward_threads) →
 * api_attention_write (trace → JSON), in attention/parse.c, attention/run.c and
 * attention/json.c; endpoints/attention/endpoint.c plugs them into the pipeline. Each step
 * is separate so the batch endpoint can run the same three per item.
 *
 * Dimension legend: n_q queries, n_k keys, d_k query/key width, d_v value width.
 */
#ifndef API_ENDPOINTS_ATTENTION_REQUEST_H
#define API_ENDPOINTS_ATTENTION_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/http/context.h"
#include "api/http/response.h"
#include "api/request/grid.h"
#include "api/request/heatmap.h"
#include "api/request/fields.h"
#include "api/request/precision.h"
#include "api/endpoints/block_map.h"
#include "api/endpoints/precision.h"
#include "api/endpoints/teach/explain.h"
#include "api/endpoints/teach/pitfall.h"
#include "api/request/variants.h"
#include "api/json/write.h"
#include "api/http/problem.h"
#include "core/attention.h"
#include "core/backward.h"
#include "core/stream.h"

/* What the run step makes for `backward` (heap, so a const request can be run). */
struct api_backward_run {
    struct attn_grads grads;          /* the whole pass's, every step */
    struct attn_stream_grads streamed; /* or a streamed one's: grad_q, grad_k, grad_v, D */
    double *seeded;            /* dO from the seed, (n_q, d_v), or NULL when it was sent */
    struct attn_vtrace exact;  /* with precision and a report: the float64 forward, kept by */
                               /*   the run for the float64 backward the report compares */
                               /*   with, and freed once it has */
};

/* `backward`: {"grad_output": dO} or {"seed": s}. Owns d_out's numbers when sent. */
struct api_backward {
    bool on;
    bool seeded;               /* dO from stream 8 of the generator, made by the run */
    uint64_t seed;
    struct attn_matrix d_out;  /* (n_q, d_v) as sent; data NULL when seeded */
    bool d_out_vector;         /* sent as (d_v) for a vector q */
    struct api_backward_run *run;
};

/* What `include` can name, as bits of api_attention_req.include. */
enum api_attention_part {
    API_PART_SCORES = 0,
    API_PART_SCALED,
    API_PART_MASKED,
    API_PART_WEIGHTS,
    API_PART_OUTPUT,
    API_PART_SUMMARY,
    API_PART_ROW_MAX,  /* softmax's inner steps, only when asked for: */
    API_PART_SHIFTED,  /*   row_max, masked - row_max, e^shifted */
    API_PART_EXP,
    API_PART_ROW_SUM,  /* Σ exp(masked − row_max) of each row, and its log-sum-exp: the */
    API_PART_LSE,      /*   row statistics a kernel returns, only when asked for */
    API_PART_VISIBLE,  /* which keys each query sees (0/1), and the tiles of that: only */
    API_PART_BLOCK_MAP, /*   when asked for (core/block_map.h) */
    API_PART_Q_ROPE,       /* the variants' steps (core/variants.h), when they run */
    API_PART_K_ROPE,
    API_PART_SOFTCAPPED,
    API_PART_DROPOUT_KEEP,
    API_PART_DROPPED,
    API_PART_GRAD_OUTPUT,  /* the backward pass's steps (core/backward.h), with `backward` */
    API_PART_GRAD_V,
    API_PART_GRAD_WEIGHTS,
    API_PART_DELTA,
    API_PART_GRAD_MASKED,
    API_PART_GRAD_SCALED,
    API_PART_GRAD_SCORES,
    API_PART_GRAD_Q_ROPE,
    API_PART_GRAD_K_ROPE,
    API_PART_GRAD_Q,
    API_PART_GRAD_K,
    API_PART_GRAD_SINK_LOGIT,
    API_PART_GRAD_BIAS,
    API_PART_COUNT
};
/* What `include` gives when absent: every step (the variants' and the backward pass's
 * too, when they run) and the summary, not softmax's inner steps. */
#define API_PART_DEFAULT (((1ul << (API_PART_SUMMARY + 1)) - 1) | \
                          (((1ul << API_PART_COUNT) - 1) & ~((1ul << API_PART_Q_ROPE) - 1)))
/* The softmax parts of an include, as api_write_softmax_parts takes them (explain.h). */
#define API_SOFTMAX_PARTS(include) (((include) >> API_PART_ROW_MAX) & 7u)
/* The row statistics of an include, as api_write_row_stats takes them (explain.h). */
#define API_ROW_STATS(include) (((include) >> API_PART_ROW_SUM) & 3u)

/* A validated request. Owns its matrices (and, through grid, the mask and bias). */
struct api_attention_req {
    struct attn_matrix q;      /* (n_q, d_k); one row when sent as a vector */
    struct attn_matrix k;      /* (n_k, d_k) */
    struct attn_matrix v;      /* (n_k, d_v) */
    bool q_is_vector;          /* q was sent as (d_k): answer with vectors */
    struct api_grid grid;      /* mask, bias, labels, round: shared with multi-head */
    double scale;              /* given, or 1/sqrt(d_k) */
    unsigned long include;     /* bits of enum api_attention_part */
    bool for_page;             /* answered as text or SVG, which show the summary */
    struct api_explain_req explain; /* one row worked out by hand, when asked */
    enum api_pitfall pitfall;  /* a learner's mistake to compute beside the answer */
    const char *name;          /* the problem's name (a batch's experiment), borrowed, or NULL */
    struct api_heatmap heatmap; /* the SVG's colour scale and title */
    struct api_variants variants; /* rope, softcap, alibi, window, sinks, dropout */
    struct attn_vtrace *vsteps;   /* the variants' own steps, filled by run; owned (heap) */
    bool has_random;           /* `random` makes q, k and v: shapes set by the parse, */
    uint64_t seed;             /*   numbers by api_attention_fill_random once admitted */
    size_t *rows;              /* `rows`: the query rows answered, in order (owned), or */
    size_t n_rows;             /*   NULL for every row (attention/rows.c) */
    bool streamed;             /* over --max-cells, but the answer needs no (n_q, n_k) */
                               /*   matrix: run by api_attention_stream, answered as JSON */
    struct api_precision precision;            /* `precision`: computed in a low format */
    struct api_precision_report *report;       /* then its report, filled by run (heap) */
    struct api_shown shown;    /* visible's and block_map's memory, made by the run step */
    struct api_backward backward; /* `backward`: dO and the gradients (attention/backward.c) */
};

/* The fields a request may hold, with what each means (an endpoint that takes a problem
 * and fields of its own, verify, names them all when one is unknown). */
extern const struct api_field api_attention_fields[];
extern const size_t api_attention_n_fields;

/*
 * Validates `doc` against the contract and fills req. pointer is the prefix of
 * every JSON pointer in errors ("" for a single request, "/items/3" in a batch).
 * On failure req holds nothing (no deinit needed, though it is harmless).
 */
bool api_attention_parse(const json_t *doc, const char *pointer, const struct api_limits *limits,
                         struct api_attention_req *req, struct api_error *err);

void api_attention_req_deinit(struct api_attention_req *req);

/*
 * The 422 limit-exceeded of a problem whose (n_q, n_k) steps are over --max-cells, for a
 * request the parse marked streamed but that is asked in a form that draws them (a page,
 * bertviz, a batch item); false.
 */
bool api_attention_refuse_cells(const struct api_attention_req *req, const char *pointer,
                                const struct api_limits *limits, bool in_batch,
                                struct api_error *err);

/* Whether req's (n_q, n_k) steps fit --max-cells: a streamed request that only chose the
 * stream (documents or a chunk hide most keys) can still be drawn. */
bool api_attention_cells_fit(const struct api_attention_req *req,
                             const struct api_limits *limits);

/*
 * attention/random.c: `random` ({"seed", "n_q", "n_k", "d_k", "d_v"}) in place of q, k
 * and v. api_attention_read_random reads it when present (*taken true), checks every
 * size and the cells each matrix would hold, and sets q, k and v's shapes with no
 * numbers; nothing is filled before admission, which counts their bytes
 * (api_attention_random_bytes). api_attention_fill_random fills them (streams 10, 11,
 * 12 of api/request/random.h, amplitude 1) where the request runs; the request owns
 * them then. api_attention_random_field names the random size behind a limit field
 * ("/q" -> "/random/n_q") when random made the inputs, else returns field.
 */
bool api_attention_read_random(const json_t *doc, const char *pointer,
                               const struct api_limits *limits, struct api_attention_req *req,
                               bool *taken, struct api_error *err);
bool api_attention_fill_random(struct api_attention_req *req, struct api_error *err);
size_t api_attention_random_bytes(const struct api_attention_req *req);
const char *api_attention_random_field(const struct api_attention_req *req, const char *field);

/*
 * attention/rows.c: `rows` ({"rows": [i, ...]}, each 0 <= i < n_q, repeats allowed).
 * api_attention_read_rows reads it (last: it refuses a vector q, explain and pitfall);
 * api_attention_select_rows, after a run, replaces trace (and r->vsteps' per-query steps)
 * by the listed rows' (a no-op without rows; on failure trace is freed and err says 503).
 * api_attention_answer_rows is the answer's row count, api_attention_rows_bytes what the
 * selection allocates.
 */
bool api_attention_read_rows(const json_t *doc, const char *prefix, struct api_attention_req *r,
                             struct api_error *err);
bool api_attention_select_rows(const struct api_attention_req *r, struct attn_trace *trace,
                               struct api_error *err);
/* The matrix `rows` builds within --max-cells: its output when streamed, else its steps. */
bool api_attention_check_rows(const struct api_attention_req *r, const char *prefix,
                              const struct api_limits *limits, struct api_error *err);
size_t api_attention_answer_rows(const struct api_attention_req *r);
size_t api_attention_rows_bytes(const struct api_attention_req *r);

/*
 * Runs the computation into trace (allocated here; free with attn_trace_free), on
 * as many threads as api_spare_threads_for lends a problem of n_q × n_k cells.
 */
bool api_attention_run(const struct api_attention_req *req, const char *pointer,
                       struct attn_trace *trace, struct api_error *err);

/*
 * Points a numeric-overflow err at the input cell [row, col] of `step` (enum attn_step
 * or a variant's, core/variants.h) came from, under pointer, with the hint that fixes
 * it: q's row for the scores, scale, bias or alibi for the masked scores, v after.
 */
void api_attention_overflow_at(const struct api_attention_req *req, const char *pointer,
                               int step, size_t row, size_t col, struct api_error *err);

/*
 * What running and writing req will hold when answered in `format`, for admission
 * (api/http/admission.h): the bytes of its trace and of its answer. JSON and bertviz
 * count the numbers written (JSON: the included parts); the heatmap counts every
 * step's numbers (an upper bound of its cells and their tooltips' numbers); text
 * counts the page as the renderer lays it out (api_attention_text_bytes), which
 * elides every matrix: about 40 bytes a query, not 4 numbers a cell.
 */
size_t api_attention_working_set(const struct api_attention_req *req, enum api_format format,
                                 size_t body_len);

/* req as core's problem (views of its matrices, mask and bias), with the summary. */
struct attn_problem api_attention_problem(const struct api_attention_req *req);

/* The 503 for a run whose memory could not be had; false. */
bool api_attention_no_memory(const struct api_attention_req *req, struct api_error *err);

/*
 * Whether req's answer needs no (n_q, n_k) matrix: it asks for the output and the row
 * statistics only (no page, explain, pitfall or dropout, which read the weights). Such a
 * request runs streamed (core/stream.h): --max-cells then bounds only its output.
 */
bool api_attention_streams(const struct api_attention_req *req);

/* What api_attention_stream holds at once for req: the answer and the threads' scratch. */
size_t api_attention_stream_bytes(const struct api_attention_req *req);

/*
 * Runs req streamed into out (allocated here; free with attn_stream_free): its `rows`, or
 * every row; the faults turned into problems as api_attention_run does.
 */
bool api_attention_stream(const struct api_attention_req *req, const char *pointer,
                          struct attn_stream *out, struct api_error *err);

/* The bytes of the trace api_attention_run allocates for req (its steps read only). */
size_t api_attention_trace_bytes(const struct api_attention_req *req);

/*
 * The field whose size drives req's working set, as a pointer relative to the
 * request ("/q"): q or k (whichever has more rows) when the (n_q, n_k) steps
 * outweigh the output, else v.
 */
const char *api_attention_limit_field(const struct api_attention_req *req);

/* The row `explain` asked for, as views into req and trace (explain.h). */
struct api_explain_row api_attention_explain_row(const struct api_attention_req *req,
                                                 const struct attn_trace *trace);

/* The mistake `pitfall` asked for, computed from req and its trace (pitfall.h). */
void api_attention_pitfall(struct api_pitfall_result *out, const struct api_attention_req *req,
                           const struct attn_trace *trace);
/*
 * attention/variants.c: the run with variants (api_attention_run calls it when
 * req->variants.any), its extra bytes for admission, and the variants' parts of the
 * JSON and text answers.
 */
bool api_attention_run_variants(const struct api_attention_req *req, const char *pointer,
                                struct attn_trace *trace, struct api_error *err);
size_t api_attention_variants_bytes(const struct api_attention_req *req);
void api_attention_write_variant_steps(struct jw *w, const struct api_attention_req *req);

/* Writes the 200 response object for req and its trace. */
/*
 * attention/backward.c: `backward`. api_attention_read_backward reads it after include
 * and the variants (422 beside `rows` or a step it cannot give; include's grad_ names
 * without it); api_attention_run_backward runs core's attn_backward on a forward pass
 * that kept every step, or with `precision` attn_backward_precision on the low one (and,
 * for the report, attn_backward on the float64 forward the run kept beside it); the rest
 * write the answer's parts and count its bytes. api_attention_backward_deinit frees what
 * it holds.
 */
bool api_attention_read_backward(const json_t *doc, const char *prefix,
                                 const struct api_limits *limits, struct api_attention_req *r,
                                 struct api_error *err);
bool api_attention_run_backward(const struct api_attention_req *r, const struct attn_trace *t,
                                struct api_error *err);
/* The streamed backward (no (n_q, n_k) matrix) from a streamed forward's output and lse,
 * when include asks only for what it gives (api_attention_backward_streams). */
bool api_attention_stream_backward(const struct api_attention_req *r,
                                   const struct attn_stream *fwd, struct api_error *err);
bool api_attention_backward_streams(const struct api_attention_req *r);
void api_attention_backward_deinit(struct api_backward *b);
size_t api_attention_backward_bytes(const struct api_attention_req *r);
size_t api_attention_backward_numbers(const struct api_attention_req *r);
void api_attention_backward_shapes(struct jw *w, const struct api_attention_req *r);
void api_attention_backward_steps(struct jw *w, const struct api_attention_req *r, int *number);
void api_attention_write_backward(struct jw *w, const struct api_attention_req *r);
/* The text page's backward steps, "backward step 1 ...", after the forward's. */
void api_attention_text_backward(struct api_buf *b, const struct api_attention_req *r,
                                 int decimals, const struct api_labels *queries,
                                 const struct api_labels *keys);

/* The run step's part of visible and block_map (attention/json.c): 503 when memory runs
 * out; nothing when neither is asked. */
bool api_attention_prepare_shown(struct api_attention_req *r, struct api_error *err);

void api_attention_write(struct jw *w, const struct api_attention_req *req,
                         const struct attn_trace *trace);

#endif

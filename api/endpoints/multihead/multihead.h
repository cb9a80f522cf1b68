/*
 * api/endpoints/multihead/multihead.h — POST /v1/multihead: self- and cross-attention
 * with projections, multi-head, grouped-query (kv_heads) and reproducible random
 * inputs.
 *
 * Flow as for /v1/attention: api_multihead_parse (document → struct
 * api_multihead_req, every field checked, random inputs sized but not filled) →
 * admission → api_multihead_fill_random → api_multihead_run (core's attn_mh_forward)
 * → api_multihead_write (trace → JSON). The fill waits for the run step because the
 * parse runs on a server worker before admission decides where the work runs: a small
 * body asking for millions of numbers must cost the worker nothing.
 *
 * Dimension legend: n_q rows of x_q (or x), n_k rows of x_kv (or x), d_model their
 * width, h heads, kv kv_heads, d_k = d_model / h.
 */
#ifndef API_ENDPOINTS_MULTIHEAD_REQUEST_H
#define API_ENDPOINTS_MULTIHEAD_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/http/context.h"
#include "api/http/response.h"
#include "api/request/grid.h"
#include "api/request/heatmap.h"
#include "api/endpoints/block_map.h"
#include "api/endpoints/precision.h"
#include "api/endpoints/teach/explain.h"
#include "api/request/variants.h"
#include "api/json/write.h"
#include "api/http/problem.h"
#include "core/mh_backward.h"
#include "core/multihead.h"

/* What the run step makes for `backward` (heap, so a const request can be run). */
struct api_mh_backward_run {
    struct attn_mh_grads grads;
    double *seeded;            /* dO from the seed, (n_q, d_model), or NULL when sent */
    struct attn_mh_trace exact;       /* with precision and a report: the float64 forward */
    struct attn_vtrace *exact_vsteps; /*   and its variants' steps (exact.heads of them, or */
                                      /*   NULL), kept by the run for the float64 backward */
                                      /*   the report compares with, freed once it has */
};

/* `backward`: {"grad_output": dO} or {"seed": s}. Owns d_out's numbers when sent. */
struct api_mh_backward {
    bool on, seeded;
    uint64_t seed;
    struct attn_matrix d_out;  /* (n_q, d_model) as sent; data NULL when seeded */
    struct api_mh_backward_run *run;
};

/* What `include` can name, as bits of api_multihead_req.include. */
enum api_mh_part {
    API_MH_X = 0, API_MH_W_Q, API_MH_W_K, API_MH_W_V, API_MH_W_O, /* inputs: off by default */
    API_MH_Q, API_MH_K, API_MH_V, API_MH_SCORES, API_MH_SCALED, API_MH_MASKED, API_MH_WEIGHTS,
    API_MH_HEAD_OUTPUTS, API_MH_CONCAT, API_MH_OUTPUT, API_MH_WEIGHTS_MEAN, API_MH_SUMMARY,
    API_MH_Q_ROPE, API_MH_K_ROPE, API_MH_SOFTCAPPED, API_MH_DROPOUT_KEEP, API_MH_DROPPED,
    API_MH_ROW_SUM, API_MH_LSE, /* each head's row statistics (h, n_q): only when asked for */
    API_MH_VISIBLE, API_MH_BLOCK_MAP, /* what every head sees and its tiles: only when asked */
    API_MH_GRAD_OUTPUT, API_MH_GRAD_W_O, API_MH_GRAD_B_O, /* the backward pass, with `backward` */
    API_MH_GRAD_WEIGHTS, API_MH_DELTA, API_MH_GRAD_MASKED, API_MH_GRAD_Q, API_MH_GRAD_K,
    API_MH_GRAD_V, API_MH_GRAD_W_Q, API_MH_GRAD_W_K, API_MH_GRAD_W_V, API_MH_GRAD_B_Q,
    API_MH_GRAD_B_K, API_MH_GRAD_B_V, API_MH_GRAD_X, API_MH_GRAD_X_Q, API_MH_GRAD_X_KV,
    API_MH_GRAD_SINK_LOGIT, API_MH_GRAD_BIAS,
    API_MH_PART_COUNT
};
/* What `include` gives when absent: every step, not the inputs or the row statistics. */
#define API_MH_DEFAULT (((1ul << API_MH_ROW_SUM) - 1) & ~((1ul << API_MH_Q) - 1))

/* The inputs a request can leave to `random`, in stream order. */
enum api_mh_input { API_IN_X_Q = 0, API_IN_X_KV, API_IN_W_Q, API_IN_W_K, API_IN_W_V, API_IN_W_O,
                    API_IN_COUNT };

/* `decode` (multihead/decode.c): the tokens after the prefill generated one at a time. */
struct api_mh_decoded; /* the run's answer: core's attn_decode and the comparison */
struct api_mh_decode {
    bool on;
    size_t prefill;               /* p, 0 < p < n */
    struct api_mh_decoded *done;  /* allocated by the parse, filled by the run; owned */
};

/* A validated request. Owns every matrix and bias vector (and, through grid, mask and bias). */
struct api_multihead_req {
    bool cross;                   /* x_q and x_kv (true) or x (false) */
    struct attn_matrix x_q;       /* (n_q, d_model): x itself for self-attention */
    struct attn_matrix x_kv;      /* (n_k, d_model): unused (data NULL) for self-attention */
    struct attn_matrix w[4];      /* w_q, w_k, w_v, w_o in the request's layout */
    double *b[4];                 /* b_q (d_model), b_k, b_v (kv·d_k), b_o (d_model); NULL = 0 */
    bool transposed;              /* weight_layout "out_in" */
    size_t d_model, heads, kv_heads, d_k;
    bool has_random;
    uint64_t seed;
    bool filled[API_IN_COUNT];    /* which inputs random makes: shape set by the parse,
                                     data NULL until api_multihead_fill_random */
    struct api_grid grid;
    double scale;
    unsigned long include;        /* bits of enum api_mh_part */
    struct api_explain_req explain; /* one row of one head worked out by hand, when asked */
    struct api_heatmap heatmap;   /* the SVG's colour scale and title */
    struct api_variants variants; /* rope, softcap, alibi, window, sinks, dropout */
    struct attn_vtrace *vsteps;   /* [h]: each head's variant steps, filled by run; owned */
    size_t *rows;                 /* `rows`: the query rows answered, in order (owned), or */
    size_t n_rows;                /*   NULL for every row (multihead/rows.c) */
    bool streamed;                /* the per-head (n_q, n_k) steps are over --max-cells, but */
                                  /*   the answer needs none: run by api_multihead_stream */
    struct api_precision precision;      /* `precision`: computed in a low format */
    struct api_precision_report *report; /* then its report, filled by run (heap) */
    struct api_shown shown;              /* visible's and block_map's memory (run step) */
    struct api_mh_backward backward;     /* `backward` (multihead/backward.c) */
    struct api_mh_decode decode;         /* `decode`: off unless asked */
};

/*
 * multihead/backward.c: `backward`. api_multihead_read_backward reads it after include
 * (422 beside rows, or for a gradient the request does not make; with it and no include
 * sent, every gradient is shown); api_multihead_run_backward runs core's attn_mh_backward
 * on the forward pass, or with `precision` attn_mh_backward_precision on the low one (and,
 * for the report, attn_mh_backward on the float64 forward the run kept beside it); the
 * rest count and write the answer's parts and the text page's backward steps.
 */
bool api_multihead_read_backward(const json_t *doc, const char *prefix,
                                 const struct api_limits *limits, struct api_multihead_req *r,
                                 bool include_sent, struct api_error *err);
/* Last, once the biases are read: include's grad_ names the request does not make. */
bool api_multihead_check_backward_include(const json_t *doc, const char *prefix,
                                          const struct api_multihead_req *r,
                                          struct api_error *err);
void api_multihead_backward_deinit(struct api_mh_backward *b);
bool api_multihead_run_backward(const struct api_multihead_req *r,
                                const struct attn_mh_problem *p,
                                const struct attn_variants *variants,
                                const struct attn_mh_trace *t, struct api_error *err);
size_t api_multihead_backward_bytes(const struct api_multihead_req *r, size_t n_q, size_t n_k);
size_t api_multihead_backward_numbers(const struct api_multihead_req *r, size_t n_q,
                                      size_t n_k);
void api_multihead_backward_shapes(struct jw *w, const struct api_multihead_req *r, size_t n_q,
                                   size_t n_k);
void api_multihead_backward_steps(struct jw *w, const struct api_multihead_req *r, size_t n_q,
                                  size_t n_k, int *number);
void api_multihead_write_backward(struct jw *w, const struct api_multihead_req *r);
/* The text page's backward steps after the forward's: each step that runs, its numbers
 * when included, and with precision its error line. */
struct api_buf;
struct api_labels;
void api_multihead_text_backward(struct api_buf *b, const struct api_multihead_req *r,
                                 int decimals, const struct api_labels *queries,
                                 const struct api_labels *keys);
/* The gradients as V2 sends them: whether part makes a step of every head (its numbers a
 * head at a time, api_multihead_grad_head) or one block (api_multihead_grad_cells, every
 * one contiguous), its shape ([h, rows, cols] for a head's steps), and whether the
 * request makes it (its bias sent, its variant on, self or cross). */
struct api_mh_grad_shape {
    size_t dims[3], rank;
};
struct api_mh_grad_shape api_multihead_grad_shape(const struct api_multihead_req *r, size_t n_q,
                                           size_t n_k, int part);
bool api_multihead_grad_per_head(int part);
bool api_multihead_grad_runs(const struct api_multihead_req *r, int part);
const double *api_multihead_grad_head(const struct api_multihead_req *r, size_t h, int part);
const double *api_multihead_grad_cells(const struct api_multihead_req *r, int part);

/*
 * What req holds at once when answered in `format`, from its sizes alone (the parse
 * checks it before any input is filled, the handler admits it with the body): the
 * inputs, the whole trace, and the answer: the numbers of the parts include asks for
 * as JSON (bertviz: the weights alone), every part's for the heatmap, and for text the
 * page as api_multihead_text_bytes lays it out; plus body_len.
 */
size_t api_multihead_working_set(const struct api_multihead_req *req, size_t n_q, size_t n_k,
                                 enum api_format format, size_t body_len);

/* The pointer (prefix + field) of the size that drives req's working set, into out. */
void api_multihead_limit_pointer(const struct api_multihead_req *req, const char *prefix,
                                 size_t n_q, size_t n_k, char *out, size_t cap);

/* The answer will be written as `format` (bertviz keeps the weights alone). */
bool api_multihead_parse(const json_t *doc, const char *prefix, const struct api_limits *limits,
                         enum api_format format, struct api_multihead_req *req,
                         struct api_error *err);
void api_multihead_req_deinit(struct api_multihead_req *req);

/*
 * The numbers of every input `random` makes (req->filled), each once: called in the
 * run step, after admission, so that on the server it happens in the lane for large
 * work. False with err a 503 when memory ran out (what was filled stays owned by req).
 */
bool api_multihead_fill_random(struct api_multihead_req *req, struct api_error *err);

/* Runs the computation into trace (allocated here; free with attn_mh_trace_free). */
bool api_multihead_run(const struct api_multihead_req *req, const char *prefix,
                       struct attn_mh_trace *trace, struct api_error *err);

/* The run step's part of visible and block_map (multihead/json.c): 503 when memory runs
 * out; nothing when neither is asked. */
bool api_multihead_prepare_shown(struct api_multihead_req *r, struct api_error *err);

void api_multihead_write(struct jw *w, const struct api_multihead_req *req,
                         const struct attn_mh_trace *trace);

/* The head and row `explain` asked for, as views into the trace (explain.h). */
struct api_explain_row api_multihead_explain_row(const struct api_multihead_req *req,
                                                 const struct attn_mh_trace *trace);
/*
 * multihead/rows.c: `rows` and the streamed route (DESIGN.md, "Row statistics, rows, and
 * any length"). api_multihead_read_rows reads rows (refused beside explain and bertviz);
 * api_multihead_check_maps, last in the parse, decides the path: the per-head (n_q, n_k)
 * steps within --max-cells (with rows, the listed rows' too), or streamed when the answer
 * needs none of them (api_multihead_streams), or a 422 at /heads. api_multihead_answer_rows
 * is the answer's row count. api_multihead_select_rows, after a whole run, replaces trace
 * (and r->vsteps) by the listed rows' (a no-op without rows; on failure trace is freed and
 * err says 503). api_multihead_stream runs a streamed request; api_multihead_stream_view
 * lends its answer to the writers as a trace with no (n_q, n_k) step (heads: h entries,
 * the caller's).
 */
bool api_multihead_read_rows(const json_t *doc, const char *prefix, enum api_format format,
                             struct api_multihead_req *req, size_t n_q, struct api_error *err);
bool api_multihead_streams(const struct api_multihead_req *req, enum api_format format);
bool api_multihead_check_maps(struct api_multihead_req *req, const char *prefix, size_t n_q,
                              size_t n_k, enum api_format format,
                              const struct api_limits *limits, struct api_error *err);
size_t api_multihead_answer_rows(const struct api_multihead_req *req);
size_t api_multihead_stream_bytes(const struct api_multihead_req *req, size_t n_q, size_t n_k);
bool api_multihead_select_rows(const struct api_multihead_req *req, struct attn_mh_trace *trace,
                               struct api_error *err);
bool api_multihead_stream(const struct api_multihead_req *req, const char *prefix,
                          struct attn_mh_stream *out, struct api_error *err);
void api_multihead_stream_view(const struct attn_mh_stream *s, struct attn_trace *heads,
                               struct attn_mh_trace *view);

/*
 * multihead/variants.c: the run with variants (api_multihead_run calls it when
 * req->variants.any; trace is allocated), the variants' per-head arrays in JSON, and
 * their steps among the eleven.
 */
enum attn_status api_multihead_run_variants(const struct api_multihead_req *req,
                                            struct attn_mh_trace *trace,
                                            const struct attn_mh_problem *p);
void api_multihead_write_variants(struct jw *w, const struct api_multihead_req *req);
/* The number of steps api_multihead_write_variant_steps writes at `stage` (0 before
 * scores, 1 after scaled, 2 after weights), writing them when w is not NULL. */
int api_multihead_write_variant_steps(struct jw *w, const struct api_multihead_req *req,
                                      int stage, int number, size_t n_q, size_t n_k);

/*
 * multihead/decode.c: `decode` (DESIGN.md, "The KV cache, one token at a time").
 * api_multihead_read_decode reads it, after `rows` (refusing what decode cannot be
 * combined with); api_multihead_decode, after the full pass, generates the tokens p … n−1
 * one at a time (core's attn_decode_run) and compares each token's weights and output
 * with the full pass's rows; the writers add `decode` to the JSON answer and its lines to
 * the text page. The sizes: the doubles the run holds, the numbers the JSON writes, the
 * bytes the text writes (0 when decode is off).
 */
bool api_multihead_read_decode(const json_t *doc, const char *prefix, enum api_format format,
                               struct api_multihead_req *req, size_t n, struct api_error *err);
bool api_multihead_decode(const struct api_multihead_req *req, const char *prefix,
                          const struct attn_mh_trace *full, struct api_error *err);
void api_multihead_write_decode(struct jw *w, const struct api_multihead_req *req);
struct api_buf;
void api_multihead_text_decode(struct api_buf *b, const struct api_multihead_req *req);
size_t api_multihead_decode_cells(const struct api_multihead_req *req, size_t n);
size_t api_multihead_decode_numbers(const struct api_multihead_req *req, size_t n);
size_t api_multihead_decode_text_bytes(const struct api_multihead_req *req, size_t n);
void api_multihead_decode_free(struct api_multihead_req *req);

/* multihead/run.c's, for decode: core's problem of req, and a failed run as a problem. */
struct attn_mh_problem api_multihead_problem(const struct api_multihead_req *req);
void api_multihead_run_failed(enum attn_status st, const struct attn_mh_fault *fault,
                              const char *prefix, struct api_error *err);

#endif

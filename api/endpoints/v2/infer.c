/*
 * api/endpoints/v2/infer.c — POST /v2/models/{model}/infer through the one pipeline
 * (endpoints/pipeline.h): read (the JSON header and the binary bytes after it),
 * parse (the model's inputs), admit, run (the inputs' numbers read, then every problem
 * of the batch), respond (the outputs as JSON data or binary tensors); and the helpers
 * the models share. Each request answered is counted for the statistics extension
 * (v2/stats.h), its parts timed where the steps meet: compute_input up to the inputs'
 * numbers read, compute_infer the model's run, compute_output the rest.
 *
 * Not here: what each model's inputs mean (v2/attention.c, v2/multihead.c), routing.
 */
#include "api/endpoints/v2/infer.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/pipeline.h"
#include "api/endpoints/v2/attention.h"
#include "api/endpoints/v2/multihead.h"
#include "api/endpoints/v2/stats.h"
#include "api/endpoints/v2/verify.h"
#include "api/http/admission.h"
#include "api/http/respond.h"
#include "api/json/numfmt.h"
#include "api/json/write.h"
#include "api/request/body.h"
#include "api/request/fields.h"
#include "api/request/float16.h"

/* ---- the pipeline ---- */

/* The models' steps (v2/model.h), by enum api_v2_model. */
static const struct api_v2_model_ops *const models[API_V2_MODEL_COUNT] = {
    [API_V2_ATTENTION] = &api_v2_attention_ops,
    [API_V2_MULTIHEAD] = &api_v2_multihead_ops,
    [API_V2_VERIFY] = &api_v2_verify_ops,
};

struct infer_state {
    enum api_v2_model which;
    const struct api_v2_model_ops *model; /* models[which] */
    const struct api_context *ctx;
    const unsigned char *bin;     /* the bytes after the JSON header (borrowed) */
    size_t bin_len;
    struct api_v2_infer header;
    union {
        struct api_v2_attention attention;
        struct api_v2_multihead multihead;
        struct api_v2_verify verify;
    } m;
    struct api_v2_outs outs;
    size_t problems;              /* the batch size, or 1: known once parsed */
    uint64_t started, loaded, ran; /* api_v2_clock_ns() at the start and after each part */
};

static json_t *read_body(void *state, const struct api_request *req, struct api_error *err)
{
    struct infer_state *st = state;
    size_t json_len;
    if (!api_v2_header_length(req->inference_header_length, req->body_len, &json_len, err))
        return NULL;
    st->bin = (const unsigned char *)req->body + json_len;
    st->bin_len = req->body_len - json_len;
    return api_parse_body_nodes(req->body, json_len, err);
}

static bool parse(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err)
{
    (void)format;
    struct infer_state *st = state;
    st->ctx = ctx;
    if (!api_v2_read_infer(doc, st->bin, st->bin_len, ctx->limits.max_cells, &st->header, err))
        return false;
    bool ok = st->model->parse(&st->m, &st->header, &ctx->limits, err);
    if (!ok)
        st->model->deinit(&st->m);
    else
        st->problems = st->model->problems(&st->m);
    return ok;
}

static bool admit(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err)
{
    const struct infer_state *st = state;
    return api_admit(ctx, st->model->working_set(&st->m, body_len, ctx->segments_ok),
                     st->model->limit_field(&st->m), err);
}

/* "[i, j, ...]": the cell of a flat row-major index in o's shape. */
static void cell_text(char *buf, size_t size, const struct api_v2_out *o, size_t flat)
{
    size_t at[API_V2_MAX_RANK], used = 0;
    for (size_t d = o->rank; d-- > 0;) {
        at[d] = flat % o->shape[d];
        flat /= o->shape[d];
    }
    buf[0] = '\0';
    for (size_t d = 0; d < o->rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu", d ? ", " : "", at[d]);
}

/* x as o's datatype holds it: its bits in *bits (2, 4 or 8 bytes' worth); false when
   a finite x rounds past the datatype's range. */
static bool narrowed(const struct api_v2_out *o, double x, uint64_t *bits)
{
    switch (o->dtype) {
    case API_V2_FP16:
    case API_V2_BF16: {
        uint16_t h;
        bool ok = o->dtype == API_V2_FP16 ? api_double_to_fp16(x, &h) : api_double_to_bf16(x, &h);
        *bits = h;
        return ok;
    }
    case API_V2_INT8: /* BLOCK_MAP's tiles: 0, 1 or 2, exact */
        *bits = (uint8_t)(int8_t)x;
        return true;
    case API_V2_BOOL: /* the verify model's VERDICT: 0 or 1, a byte */
        *bits = x != 0.0;
        return true;
    case API_V2_FP32: {
        float f = (float)x; /* one rounding, to nearest even, from the double */
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        *bits = u;
        return isfinite(f) || !isfinite(x);
    }
    default:
        memcpy(bits, &x, sizeof x);
        return true;
    }
}

/* The value o's datatype sends for x (x itself for FP64). */
static double as_sent(const struct api_v2_out *o, double x)
{
    uint64_t bits;
    narrowed(o, x, &bits);
    switch (o->dtype) {
    case API_V2_FP16: return api_fp16_to_double((uint16_t)bits);
    case API_V2_BF16: return api_bf16_to_double((uint16_t)bits);
    case API_V2_FP32: return (double)(float)x;
    default: return x;
    }
}

/* Output o's cell `flat` (value x) past its datatype's range: err, pointing at what set it. */
static bool past_range(const struct infer_state *st, size_t i, size_t flat, double x,
                       struct api_error *err)
{
    const struct api_v2_out *o = &st->outs.out[i];
    char cell[24 * API_V2_MAX_RANK];
    cell_text(cell, sizeof cell, o, flat);
    if (o->dtype_asked) {
        api_error_set(err, API_NUMERIC_OVERFLOW, "output %s cell [%s] is %g, past %s's largest "
                      "finite value (%g): as %s it would be infinite", o->name, cell, x,
                      api_v2_dtype_name(o->dtype), o->dtype == API_V2_FP16 ? API_FP16_MAX
                      : o->dtype == API_V2_BF16 ? API_BF16_MAX : (double)FLT_MAX,
                      api_v2_dtype_name(o->dtype));
        api_error_at(err, "/outputs/%zu/parameters/datatype", i);
        api_error_hint(err, "ask for %s as FP64 (\"parameters\": {\"datatype\": \"FP64\"}), "
                       "which holds it: attnd computes in float64 either way", o->name);
        return false;
    }
    size_t q_input = st->model->queries_input(&st->m);
    api_error_set(err, API_NUMERIC_OVERFLOW, "output %s cell [%s] is %g, past "
                  "FP32's range (about 3.4e38): as FP32 it would be infinite",
                  o->name, cell, x);
    api_error_at(err, "/inputs/%zu/datatype", q_input);
    api_error_hint(err, "send %s as FP64: the outputs are then FP64, which hold it "
                   "(attnd computes in float64 either way)",
                   st->model->queries);
    return false;
}

/*
 * Outputs sent narrower than FP64 hold what their datatype can: a finite float64 past
 * its range would be sent as ±inf (null in JSON data, which reads as a blocked cell of
 * MASKED though that key took the weight). Such an answer is refused, naming the output
 * and cell; the math stays float64 throughout, so asking for FP64 answers it. -inf where
 * MASKED blocks is not a number that overflowed: it passes.
 */
static bool representable(const struct infer_state *st, struct api_error *err)
{
    for (size_t i = 0; i < st->outs.n; i++) {
        const struct api_v2_out *o = &st->outs.out[i];
        if (o->dtype == API_V2_FP64)
            continue;
        for (size_t k = 0; k < o->n_parts; k++)
            for (size_t j = 0; j < o->part_len; j++) {
                uint64_t bits;
                if (!narrowed(o, o->parts[k][j], &bits))
                    return past_range(st, i, k * o->part_len + j, o->parts[k][j], err);
            }
    }
    return true;
}

static bool run(void *state, struct api_error *err)
{
    struct infer_state *st = state;
    if (!st->model->load(&st->m, err))
        return false;
    st->loaded = api_v2_clock_ns();
    bool ok = st->model->run(&st->m, &st->outs, err);
    st->ran = api_v2_clock_ns();
    return ok && representable(st, err);
}

/* ---- the answer ---- */

/* Little-endian stores, whatever the host's order. */
static void store_le(unsigned char *p, uint64_t v, size_t size)
{
    for (size_t b = 0; b < size; b++, v >>= 8)
        p[b] = (unsigned char)v;
}

/* Whether this host stores numbers little-endian, as the wire does. */
static bool host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Whether o's numbers are the wire's bytes as they lie (FP64 on a little-endian host). */
static bool sent_as_they_lie(const struct api_v2_out *o)
{
    return o->dtype == API_V2_FP64 && host_little_endian();
}

static size_t tensor_bytes(const struct api_v2_out *o)
{
    if (o->dtype == API_V2_BYTES) /* each element's length, then its bytes */
        return o->count * api_v2_dtype_size(o->dtype) + o->text.len;
    return o->count * api_v2_dtype_size(o->dtype); /* admitted: it fits */
}

/* A BYTES output's element i: its bytes, *len of them. */
static const char *element(const struct api_v2_out *o, size_t i, size_t *len)
{
    size_t start = i > 0 ? o->ends[i - 1] : 0;
    *len = o->ends[i] - start;
    return o->text.data + start;
}

/* A BYTES output as Triton lays it out: each element a 4-byte little-endian length and
 * then its bytes, in order. */
static void write_elements(unsigned char *p, const struct api_v2_out *o)
{
    for (size_t i = 0; i < o->count; i++) {
        size_t len;
        const char *bytes = element(o, i, &len);
        store_le(p, len, 4);
        memcpy(p + 4, bytes, len);
        p += 4 + len;
    }
}

/* o's tensor at p, in the wire's bytes (count × its datatype's size), little-endian. */
static void write_binary(unsigned char *p, const struct api_v2_out *o)
{
    if (o->dtype == API_V2_BYTES) {
        write_elements(p, o);
        return;
    }
    size_t size = api_v2_dtype_size(o->dtype), part_bytes = o->part_len * size;
    for (size_t k = 0; k < o->n_parts; k++, p += part_bytes) {
        if (sent_as_they_lie(o)) {
            memcpy(p, o->parts[k], part_bytes);
            continue;
        }
        for (size_t j = 0; j < o->part_len; j++) {
            uint64_t bits;
            narrowed(o, o->parts[k][j], &bits); /* representable() checked every cell */
            store_le(p + j * size, bits, size);
        }
    }
}

static void write_header(struct jw *w, const struct infer_state *st)
{
    jw_object_begin(w);
    JW_KEY(w, "model_name");
    jw_string(w, api_v2_model_name(st->which));
    JW_KEY(w, "model_version");
    jw_string(w, "1");
    if (st->header.id != NULL) {
        JW_KEY(w, "id");
        jw_string(w, st->header.id);
    }
    JW_KEY(w, "outputs");
    jw_array_begin(w);
    for (size_t i = 0; i < st->outs.n; i++) {
        const struct api_v2_out *o = &st->outs.out[i];
        jw_object_begin(w);
        JW_KEY(w, "name");
        jw_string(w, o->name);
        JW_KEY(w, "datatype");
        jw_string(w, api_v2_dtype_name(o->dtype));
        JW_KEY(w, "shape");
        jw_array_begin(w);
        for (size_t d = 0; d < o->rank; d++)
            jw_int(w, (long long)o->shape[d]);
        jw_array_end(w);
        if (o->binary || o->has_sparsity) {
            JW_KEY(w, "parameters");
            jw_object_begin(w);
            if (o->binary) {
                JW_KEY(w, "binary_data_size");
                jw_int(w, (long long)tensor_bytes(o));
            }
            if (o->has_sparsity) { /* BLOCK_MAP: the share of empty tiles */
                JW_KEY(w, "sparsity");
                jw_double(w, o->sparsity);
            }
            jw_object_end(w);
        }
        if (!o->binary) {
            /* V2 data is flat, row-major; blocked MASKED cells are null (no -inf in JSON). */
            JW_KEY(w, "data");
            jw_array_begin(w);
            for (size_t e = 0; o->dtype == API_V2_BYTES && e < o->count; e++) {
                size_t len;
                const char *bytes = element(o, e, &len);
                jw_string_n(w, bytes, len);
            }
            for (size_t k = 0; k < o->n_parts; k++)
                for (size_t j = 0; j < o->part_len; j++) {
                    double x = as_sent(o, o->parts[k][j]);
                    if (o->dtype == API_V2_BOOL)
                        jw_bool(w, x != 0.0);
                    else if (isfinite(x))
                        jw_double(w, x);
                    else
                        jw_null(w);
                }
            jw_array_end(w);
        }
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

static void out_of_memory(struct api_response *res)
{
    struct api_error e;
    api_error_set(&e, API_UNAVAILABLE, "no memory for the response");
    api_respond_error_as(res, &e, API_ERRORS_V2);
}

/* Appends data[0, len) to segs (room made); base, when not NULL, is now theirs. */
static void push_piece(struct api_segments *segs, void *base, const void *data, size_t len)
{
    segs->seg[segs->n++] = (struct api_segment){ base, data, len };
    segs->total += len;
}

/*
 * The binary outputs as pieces after the JSON header (taken over): FP64 on this host's
 * order is borrowed from the outputs where they lie, FP32, FP16 and BF16 converted in
 * one pass into a piece of their own; the pieces then own the outputs (and the trace they lie in), so
 * nothing is copied and everything is freed once the answer is sent. NULL (the header
 * freed, st's outputs kept) when memory runs out.
 */
static struct api_segments *binary_pieces(struct infer_state *st, char *json, size_t json_len)
{
    size_t n = 1;
    for (size_t i = 0; i < st->outs.n; i++)
        if (st->outs.out[i].binary)
            n += sent_as_they_lie(&st->outs.out[i]) ? st->outs.out[i].n_parts : 1;
    struct api_segments *segs = api_segments_alloc(n);
    if (segs == NULL) {
        free(json);
        return NULL;
    }
    push_piece(segs, json, json, json_len);
    for (size_t i = 0; i < st->outs.n; i++) {
        const struct api_v2_out *o = &st->outs.out[i];
        if (!o->binary)
            continue;
        if (sent_as_they_lie(o)) {
            for (size_t k = 0; k < o->n_parts; k++)
                push_piece(segs, NULL, o->parts[k], o->part_len * sizeof(double));
            continue;
        }
        size_t bytes = tensor_bytes(o);
        unsigned char *p = malloc(bytes);
        if (p == NULL) {
            api_segments_free(segs);
            return NULL;
        }
        write_binary(p, o);
        push_piece(segs, p, p, bytes);
    }
    segs->owner_bytes = api_v2_outs_bytes(&st->outs);
    segs->owner = api_v2_outs_move(&st->outs);
    if (segs->owner == NULL) {
        api_segments_free(segs);
        return NULL;
    }
    segs->owner_free = api_v2_outs_free;
    return segs;
}

/* The binary outputs copied after the JSON header, into one body (json taken over). */
static char *binary_body(const struct infer_state *st, char *json, size_t json_len,
                         size_t binary_bytes)
{
    char *body = realloc(json, json_len + binary_bytes + 1);
    if (body == NULL) {
        free(json);
        return NULL;
    }
    unsigned char *p = (unsigned char *)body + json_len;
    for (size_t i = 0; i < st->outs.n; i++) {
        const struct api_v2_out *o = &st->outs.out[i];
        if (!o->binary)
            continue;
        write_binary(p, o);
        p += tensor_bytes(o);
    }
    return body;
}

static void respond(void *state, const struct api_context *ctx, struct api_response *res)
{
    struct infer_state *st = state;
    size_t binary_bytes = 0, json_numbers = 0;
    for (size_t i = 0; i < st->outs.n; i++)
        if (st->outs.out[i].binary)
            binary_bytes += tensor_bytes(&st->outs.out[i]);
        else
            json_numbers += st->outs.out[i].count;
    struct jw w;
    jw_init(&w, -1);
    /* The text at once, as admission counted it, rather than grown by doubling. */
    jw_presize(&w, 1024 + json_numbers * API_ANSWER_BYTES_PER_NUMBER);
    write_header(&w, st);
    if (binary_bytes == 0) {
        api_respond_json_as(res, &w, API_ERRORS_V2);
        return;
    }
    size_t json_len;
    char *json = jw_take(&w, &json_len);
    if (json != NULL && api_v2_in_pieces(binary_bytes, ctx->segments_ok))
        res->segments = binary_pieces(st, json, json_len);
    else if (json != NULL)
        res->body = binary_body(st, json, json_len, binary_bytes);
    if (res->segments == NULL && res->body == NULL) {
        out_of_memory(res);
        return;
    }
    char length[24];
    snprintf(length, sizeof length, "%zu", json_len);
    res->status = 200;
    res->content_type = "application/octet-stream";
    res->body_len = json_len + binary_bytes;
    api_response_add_header(res, "Inference-Header-Content-Length", length);
}

static void deinit(void *state)
{
    struct infer_state *st = state;
    api_v2_outs_deinit(&st->outs);
    st->model->deinit(&st->m);
}

static const struct api_endpoint infer = {
    .parse = parse, .admit = admit, .run = run, .respond = respond, .deinit = deinit,
    .read = read_body, .errors = API_ERRORS_V2,
};

void api_v2_infer(const struct api_context *ctx, const struct api_request *req,
                  enum api_v2_model model, struct api_response *res)
{
    struct infer_state state;
    memset(&state, 0, sizeof state);
    state.which = model;
    state.model = models[model];
    state.started = api_v2_clock_ns();
    api_pipeline_run(&infer, &state, ctx, req, API_FORMAT_JSON, res);
    uint64_t ended = api_v2_clock_ns();
    /* A request sent to the server's lane is answered, and counted, when it runs there. */
    if (res->deferred)
        return;
    if (res->status != 200) {
        api_v2_stats_fail(model, ctx->queued_ns + (ended - state.started));
        return;
    }
    struct api_v2_timing t = {
        .queue_ns = ctx->queued_ns,
        .input_ns = state.loaded - state.started,
        .infer_ns = state.ran - state.loaded,
        .output_ns = ended - state.ran,
    };
    api_v2_stats_success(model, state.problems, &t);
}

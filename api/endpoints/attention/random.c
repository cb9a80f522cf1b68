/*
 * api/endpoints/attention/random.c — POST /v1/attention's `random`: {"seed", "n_q", "n_k",
 * "d_k", "d_v"} in place of q, k and v, so that a long problem fits in a curl line.
 *
 * q is stream 10, k 11 and v 12 of the documented generator (api/request/random.h),
 * amplitude 1, row-major, as /v1/multihead's `random` draws its inputs. The parse only
 * sizes the three matrices (data NULL) and checks every cell count against --max-cells;
 * admission counts their bytes; they are filled where the request runs (the pipeline's
 * run step), so a request refused by a later field or by admission fills nothing.
 *
 * Not here: the rest of the request (attention/parse.c), the generator (random.c).
 */
#include "api/endpoints/attention/attention.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/request/fields.h"
#include "api/request/random.h"

static const struct api_field random_fields[] = {
    { "seed", "an integer from 0 to 2^63-1" },
    { "n_q", "rows of q: the queries" },
    { "n_k", "rows of k and v: the keys" },
    { "d_k", "columns of q and k" },
    { "d_v", "columns of v" },
};
#define N_SIZES 4
static const char *const size_names[N_SIZES] = { "n_q", "n_k", "d_k", "d_v" };
enum { N_Q, N_K, D_K, D_V };

/* q, k or v given beside `random`, which makes all three: one of them must go. */
static bool check_alone(const json_t *doc, const char *prefix, struct api_error *err)
{
    static const char *const inputs[] = { "q", "k", "v" };
    for (size_t i = 0; i < 3; i++) {
        if (api_member(doc, inputs[i]) == NULL)
            continue;
        api_error_set(err, API_INVALID_VALUE, "%s is given, but random makes q, k and v: send "
                      "them or random, not both", inputs[i]);
        api_error_at(err, "%s/%s", prefix, inputs[i]);
        api_error_hint(err, "drop random to send your own q, k and v, or drop q, k and v to have "
                       "random make them");
        return false;
    }
    return true;
}

/* The four sizes, each required, each an integer in [1, 2^31]. */
static bool read_sizes(const json_t *node, const char *ptr, long long size[N_SIZES],
                       struct api_error *err)
{
    for (size_t i = 0; i < N_SIZES; i++) {
        char at[192];
        API_FIELD_POINTER(at, ptr, size_names[i]);
        const json_t *value = api_member(node, size_names[i]);
        if (value == NULL) {
            api_error_set(err, API_MISSING_FIELD, "random.%s is required to fill the inputs "
                          "not given", size_names[i]);
            api_error_at(err, "%s", at);
            return false;
        }
        if (!api_read_int_range(value, at, size_names[i], 1, 1ll << 31, &size[i], err))
            return false;
    }
    return true;
}

/*
 * Every matrix the sizes make, within --max-cells before anything is allocated: q, k,
 * v and the output, each named by its larger size. The (n_q, n_k) steps are the parse's
 * to judge (attention/parse.c), once it knows whether the answer needs them.
 */
static bool check_cells(const char *ptr, const long long size[N_SIZES],
                        const struct api_limits *limits, struct api_error *err)
{
    static const struct { int a, b; const char *what; } matrices[] = {
        { N_Q, D_K, "q" }, { N_K, D_K, "k" }, { N_K, D_V, "v" },
        { N_Q, D_V, "the output" },
    };
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; i++) {
        int overflow = 0;
        size_t a = (size_t)size[matrices[i].a], b = (size_t)size[matrices[i].b];
        size_t cells = attn_cells(a, b, &overflow);
        if (!overflow && cells <= limits->max_cells)
            continue;
        int blame = a >= b ? matrices[i].a : matrices[i].b;
        api_error_set(err, API_LIMIT_EXCEEDED, "random makes %s of %zu x %zu cells; this server "
                      "computes at most %zu cells in one matrix", matrices[i].what, a, b,
                      limits->max_cells);
        api_error_at(err, "%s/%s", ptr, size_names[blame]);
        api_error_hint(err, "ask for fewer queries, keys or columns");
        return false;
    }
    return true;
}

bool api_attention_read_random(const json_t *doc, const char *prefix,
                               const struct api_limits *limits, struct api_attention_req *r,
                               bool *taken, struct api_error *err)
{
    const json_t *node = api_member(doc, "random");
    *taken = node != NULL;
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "random");
    long long size[N_SIZES];
    if (!api_random_check_object(node, ptr, "{\"seed\": 0, \"n_q\": 4, \"n_k\": 4, \"d_k\": 8, "
                                 "\"d_v\": 8}", random_fields,
                                 sizeof random_fields / sizeof random_fields[0], err) ||
        !check_alone(doc, prefix, err) ||
        !api_random_read_seed(node, ptr, &r->seed, err) || !read_sizes(node, ptr, size, err) ||
        !check_cells(ptr, size, limits, err))
        return false;
    /* Shapes now, numbers once admitted (api_attention_fill_random). */
    r->q = attn_matrix_view(NULL, (size_t)size[N_Q], (size_t)size[D_K]);
    r->k = attn_matrix_view(NULL, (size_t)size[N_K], (size_t)size[D_K]);
    r->v = attn_matrix_view(NULL, (size_t)size[N_K], (size_t)size[D_V]);
    r->q_is_vector = false;
    r->has_random = true;
    return true;
}

bool api_attention_fill_random(struct api_attention_req *r, struct api_error *err)
{
    if (!r->has_random)
        return true;
    return api_random_fill_matrix(&r->q, r->seed, API_STREAM_Q, 1.0, err) &&
           api_random_fill_matrix(&r->k, r->seed, API_STREAM_K, 1.0, err) &&
           api_random_fill_matrix(&r->v, r->seed, API_STREAM_V, 1.0, err);
}

size_t api_attention_random_bytes(const struct api_attention_req *r)
{
    if (!r->has_random)
        return 0;
    /* Each matrix is within --max-cells, so each product fits; their sum may not. */
    size_t cells[3] = { r->q.rows * r->q.cols, r->k.rows * r->k.cols, r->v.rows * r->v.cols };
    size_t bytes = 0;
    for (int i = 0; i < 3; i++) {
        size_t b = cells[i] > SIZE_MAX / sizeof(double) ? SIZE_MAX : cells[i] * sizeof(double);
        bytes = bytes > SIZE_MAX - b ? SIZE_MAX : bytes + b;
    }
    return bytes;
}

const char *api_attention_random_field(const struct api_attention_req *r, const char *field)
{
    if (!r->has_random)
        return field;
    if (strcmp(field, "/q") == 0)
        return "/random/n_q";
    return strcmp(field, "/k") == 0 ? "/random/n_k" : "/random/d_v";
}

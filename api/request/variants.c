/*
 * api/request/variants.c — reading the variants' fields (see variants.h), in the
 * order of their steps, each mistake naming its pointer with a hint.
 */
#include "api/request/variants.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/problem.h"
#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"

/* The largest window side or sink count: sizes are at most INT_MAX anyway. */
#define API_VARIANT_MAX_INT 2147483647LL

static bool read_finite(const json_t *node, const char *ptr, const char *name, const char *hint,
                        double *out, struct api_error *err)
{
    if (json_is_number(node) && isfinite(json_number_value(node))) {
        *out = json_number_value(node);
        return true;
    }
    api_error_set(err, API_INVALID_VALUE, "%s must be a finite number, not %s", name,
                  api_json_kind(node));
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "%s", hint);
    return false;
}

/*
 * A list of exactly n finite numbers (a vector), or with allow_scalar one number
 * meaning n copies of it. *out is malloc'd (n entries). per_what says what each number
 * belongs to ("one per key"), a catalogued phrase the hints quote.
 */
static bool read_list(const json_t *node, const char *ptr, const char *name, size_t n,
                      const char *per_what, bool allow_scalar, double **out,
                      struct api_error *err)
{
    const char *count = api_tr(per_what);
    *out = NULL;
    if (allow_scalar && json_is_number(node)) {
        double x;
        char hint[160];
        snprintf(hint, sizeof hint, API_TR("give %s as a number, or a list of %zu numbers (%s)"),
                 name, n, count);
        if (!read_finite(node, ptr, name, hint, &x, err))
            return false;
        if ((*out = malloc(n * sizeof **out)) == NULL) {
            api_error_set(err, API_UNAVAILABLE, "no memory for %s", name);
            return false;
        }
        for (size_t i = 0; i < n; i++)
            (*out)[i] = x;
        return true;
    }
    if (!json_is_array(node)) {
        if (allow_scalar)
            api_error_set(err, API_INVALID_VALUE, "%s must be a number or a list of %zu numbers, "
                          "not %s", name, n, api_json_kind(node));
        else
            api_error_set(err, API_INVALID_VALUE, "%s must be a list of %zu numbers, not %s", name,
                          n, api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "give %s as a flat list of %zu numbers, %s", name, n, count);
        return false;
    }
    size_t given = json_array_size(node);
    bool nested = given > 0 && json_is_array(json_array_get(node, 0));
    if (!nested && given != n) { /* before reading: not a matrix over a cell limit */
        api_error_set(err, API_INVALID_VALUE, "%s has %zu numbers but needs %zu, %s", name,
                      given, n, count);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "give %s as a flat list of %zu numbers, %s", name, n, count);
        return false;
    }
    const struct api_matrix_spec spec = { name, "(n)", true, false };
    struct attn_matrix m;
    bool is_vector;
    if (!api_read_matrix(node, ptr, &spec, n + 1, &m, &is_vector, err)) {
        if (err->type == API_LIMIT_EXCEEDED) { /* a nested list past n + 1 numbers */
            api_error_set(err, API_INVALID_VALUE, "%s has more than %zu numbers but needs %zu, "
                          "%s", name, n + 1, n, count);
            api_error_at(err, "%s", ptr);
            api_error_hint(err, "give %s as a flat list of %zu numbers, %s", name, n, count);
        }
        return false;
    }
    if (!is_vector || m.cols != n) {
        api_error_set(err, API_INVALID_VALUE, "%s has %zu numbers but needs %zu, %s", name,
                      is_vector ? m.cols : m.rows * m.cols, n, count);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "give %s as a flat list of %zu numbers, %s", name, n, count);
        api_matrix_free(&m);
        return false;
    }
    *out = m.data; /* contiguous, malloc'd: ours now */
    return true;
}

/*
 * Whether every rotation angle, position x base^(-2c/r), was finite. A base below 1
 * makes the frequencies grow with c (1e-320 gives ~1e310 for r = 64), and cos and sin
 * of an infinite angle are NaN: without this the overflow surfaced in q_rope and was
 * blamed on q ("scale q down") even for a q of zeros. The angles are the base's doing
 * (with the positions), so the base is named.
 */
static bool rope_angles_finite(struct api_variants *v, const char *rope_ptr, struct api_error *err)
{
    const struct attn_rope *r = &v->rope;
    size_t cells = (r->n_q + r->n_k) * (r->rotated / 2) * 2; /* the one block of four tables */
    for (size_t c = 0; c < cells; c++)
        if (!isfinite(r->cos_q[c])) {
            api_error_set(err, API_INVALID_VALUE, "rope.base %g makes a rotation angle (position "
                          "x base^(-2c/r)) overflow past the largest double", r->base);
            api_error_at(err, "%s/base", rope_ptr);
            api_error_hint(err, "a base below 1 makes each pair turn faster than the last; the "
                           "usual base is 10000 (llama 3 uses 500000)");
            return false;
        }
    return true;
}

static bool read_rope(const json_t *node, const char *prefix, const struct api_variant_sizes *s,
                      struct api_variants *v, struct api_error *err)
{
    static const struct api_field rope_fields[] = {
        { "base", "the frequency base, default 10000" },
        { "layout", "\"half\" (Hugging Face) or \"interleaved\" (Meta's llama)" },
        { "fraction", "the share of d_k that rotates, default 1" },
        { "positions_q", "each query's position, default n_k - n_q + i" },
        { "positions_k", "each key's position, default j" },
    };
    static const char *const layouts[] = { "half", "interleaved" };
    char ptr[160], at[200];
    const json_t *m;
    API_FIELD_POINTER(ptr, prefix, "rope");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "rope must be an object, not %s",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "send {} for the defaults: {\"base\": 10000, \"layout\": \"half\", "
                       "\"fraction\": 1}");
        return false;
    }
    if (!api_check_fields(node, ptr, rope_fields, sizeof rope_fields / sizeof rope_fields[0], err))
        return false;
    v->rope.base = 10000;
    v->rope_fraction = 1;
    if ((m = api_member(node, "base")) != NULL) {
        API_FIELD_POINTER(at, ptr, "base");
        if (!api_read_positive(m, at, "rope.base", &v->rope.base, err)) {
            api_error_hint(err, "the usual base is 10000 (llama 3 uses 500000)");
            return false;
        }
    }
    if ((m = api_member(node, "layout")) != NULL) {
        size_t index;
        API_FIELD_POINTER(at, ptr, "layout");
        if (!api_read_choice(m, at, "rope.layout", layouts, 2, &index, err))
            return false;
        v->rope.layout = index == 1 ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF;
    }
    if ((m = api_member(node, "fraction")) != NULL) {
        API_FIELD_POINTER(at, ptr, "fraction");
        if (!api_read_positive(m, at, "rope.fraction", &v->rope_fraction, err) ||
            v->rope_fraction > 1) {
            api_error_set(err, API_INVALID_VALUE, "rope.fraction must be in (0, 1]");
            api_error_at(err, "%s", at);
            api_error_hint(err, "fraction is the share of each head's d_k = %zu columns that "
                           "rotate: 1 for all, 0.25 for a quarter (GPT-J, GPT-NeoX)", s->d_k);
            return false;
        }
    }
    size_t r = (size_t)floor((double)s->d_k * v->rope_fraction);
    r -= r % 2;
    if (r == 0) {
        api_error_set(err, API_INVALID_VALUE, "rope would rotate no column: d_k = %zu times "
                      "fraction %g, rounded down to even, is 0", s->d_k, v->rope_fraction);
        api_error_at(err, "%s", api_member(node, "fraction") != NULL ? at : ptr);
        api_error_hint(err, "rotation turns pairs of columns: d_k x fraction must be at least 2");
        return false;
    }
    v->rope.rotated = r;
    if ((m = api_member(node, "positions_q")) != NULL) {
        API_FIELD_POINTER(at, ptr, "positions_q");
        if (!read_list(m, at, "rope.positions_q", s->n_q, API_N("one per query"), false,
                       &v->positions_q, err))
            return false;
    }
    if ((m = api_member(node, "positions_k")) != NULL) {
        API_FIELD_POINTER(at, ptr, "positions_k");
        if (!read_list(m, at, "rope.positions_k", s->n_k, API_N("one per key"), false,
                       &v->positions_k, err))
            return false;
    }
    v->rope.positions_q = v->positions_q;
    v->rope.positions_k = v->positions_k;
    if (attn_rope_prepare(&v->rope, s->n_q, s->n_k) != ATTN_OK) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the rotation tables");
        return false;
    }
    v->has_rope = true;
    return rope_angles_finite(v, ptr, err);
}

static bool read_alibi(const json_t *node, const char *prefix, const struct api_variant_sizes *s,
                       struct api_variants *v, struct api_error *err)
{
    char ptr[160];
    API_FIELD_POINTER(ptr, prefix, "alibi");
    if (json_is_string(node)) {
        if (strcmp(json_string_value(node), "auto") != 0) {
            api_error_set(err, API_INVALID_VALUE, "alibi is a string other than \"auto\"");
            api_error_at(err, "%s", ptr);
            api_error_hint(err, "give \"auto\" for the paper's slopes, a number, or a list of "
                           "%zu slopes (one per head)", s->heads);
            return false;
        }
        if ((v->alibi_slopes = malloc(s->heads * sizeof(double))) == NULL) {
            api_error_set(err, API_UNAVAILABLE, "no memory for the slopes");
            return false;
        }
        attn_alibi_slopes(s->heads, v->alibi_slopes);
        v->alibi_auto = true;
    } else if (!read_list(node, ptr, "alibi", s->heads, API_N("one per head"), true,
                          &v->alibi_slopes, err)) {
        return false;
    }
    for (size_t h = 0; h < s->heads; h++)
        if (v->alibi_slopes[h] < 0) {
            api_error_set(err, API_INVALID_VALUE, "alibi slope %g is negative", v->alibi_slopes[h]);
            if (json_is_array(node))
                api_error_at(err, "%s/%zu", ptr, h);
            else
                api_error_at(err, "%s", ptr);
            api_error_hint(err, "a slope m >= 0 subtracts m x distance; \"auto\" gives the "
                           "paper's slopes");
            return false;
        }
    v->alibi = true;
    return true;
}

/* A window side: an integer >= 0 or null (unbounded). */
static bool read_side(const json_t *win, const char *ptr, const char *name, bool *has,
                      size_t *out, struct api_error *err)
{
    char at[200];
    long long x;
    const json_t *m = api_member(win, name);
    if (m == NULL)
        return true;
    API_FIELD_POINTER(at, ptr, name);
    if (!api_read_int_range(m, at, name, 0, API_VARIANT_MAX_INT, &x, err)) {
        if (strcmp(name, "left") == 0)
            api_error_hint(err, "window.left counts the keys before the query's position: an "
                           "integer >= 0, or null for no limit");
        else
            api_error_hint(err, "window.right counts the keys after the query's position: an "
                           "integer >= 0, or null for no limit");
        return false;
    }
    *has = true;
    *out = (size_t)x;
    return true;
}

static bool read_window(const json_t *node, const char *prefix, struct api_variants *v,
                        struct api_error *err)
{
    static const struct api_field window_fields[] = {
        { "left", "keys visible before the query's position (null: all)" },
        { "right", "keys visible after it (null: all)" },
    };
    char ptr[160];
    API_FIELD_POINTER(ptr, prefix, "window");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "window must be an object, not %s",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "e.g. {\"left\": 256, \"right\": 0}: each query sees itself and the "
                       "256 keys before it");
        return false;
    }
    if (!api_check_fields(node, ptr, window_fields, 2, err) ||
        !read_side(node, ptr, "left", &v->has_left, &v->left, err) ||
        !read_side(node, ptr, "right", &v->has_right, &v->right, err))
        return false;
    v->window = true;
    return true;
}

static bool read_dropout(const json_t *node, const char *prefix, struct api_variants *v,
                         struct api_error *err)
{
    static const struct api_field dropout_fields[] = {
        { "p", "the probability of dropping a weight, in [0, 1)" },
        { "seed", "the generator's seed (an integer >= 0), default 0" },
    };
    char ptr[160], at[200];
    const json_t *m;
    API_FIELD_POINTER(ptr, prefix, "dropout");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "dropout must be an object, not %s",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "e.g. {\"p\": 0.1, \"seed\": 42}");
        return false;
    }
    if (!api_check_fields(node, ptr, dropout_fields, 2, err))
        return false;
    API_FIELD_POINTER(at, ptr, "p");
    if ((m = api_member(node, "p")) == NULL) {
        api_error_set(err, API_MISSING_FIELD, "dropout.p is required");
        api_error_at(err, "%s", at);
        api_error_hint(err, "e.g. {\"p\": 0.1, \"seed\": 42}; p = 0 drops nothing");
        return false;
    }
    if (!json_is_number(m) || !(json_number_value(m) >= 0 && json_number_value(m) < 1)) {
        /* A number out of range is named by its value: "not a number" misled for p = 1. */
        if (json_is_number(m))
            api_error_set(err, API_INVALID_VALUE, "dropout.p is %g, but it must be in [0, 1): "
                          "at least 0 and below 1", json_number_value(m));
        else
            api_error_set(err, API_INVALID_VALUE, "dropout.p must be a number in [0, 1), not %s",
                          api_json_kind(m));
        api_error_at(err, "%s", at);
        api_error_hint(err, "p is the share of weights dropped; the kept ones are divided by "
                       "1 - p, so p = 1 would divide by 0");
        return false;
    }
    v->dropout_p = json_number_value(m);
    if ((m = api_member(node, "seed")) != NULL) {
        long long seed;
        API_FIELD_POINTER(at, ptr, "seed");
        if (!api_read_int_range(m, at, "dropout.seed", 0, INT64_MAX, &seed, err)) {
            api_error_hint(err, "the seed is an integer >= 0: the same seed drops the same cells");
            return false;
        }
        v->dropout_seed = (unsigned long long)seed;
    }
    v->dropout = true;
    return true;
}

static bool read_scalars(const json_t *doc, const char *prefix, const struct api_variant_sizes *s,
                         struct api_variants *v, struct api_error *err)
{
    char ptr[160];
    const json_t *m;
    if ((m = api_member(doc, "softcap")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "softcap");
        if (!api_read_positive(m, ptr, "softcap", &v->softcap, err)) {
            api_error_hint(err, "softcap c keeps each scaled score within ±c as c·tanh(s/c): "
                           "c > 0 (Gemma 2 uses 50)");
            return false;
        }
    }
    if ((m = api_member(doc, "sink_tokens")) != NULL) {
        long long n;
        API_FIELD_POINTER(ptr, prefix, "sink_tokens");
        if (!api_read_int_range(m, ptr, "sink_tokens", 0, API_VARIANT_MAX_INT, &n, err)) {
            api_error_hint(err, "sink_tokens is how many first keys stay visible through the "
                           "window (StreamingLLM keeps 4)");
            return false;
        }
        v->sink_tokens = (size_t)n;
    }
    if ((m = api_member(doc, "sink_logit")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "sink_logit");
        if (!read_list(m, ptr, "sink_logit", s->heads, API_N("one per head"), true,
                       &v->sink_logits, err))
            return false;
        v->sink = true;
    }
    return true;
}

bool api_variants_read(const json_t *doc, const char *prefix, const struct api_variant_sizes *s,
                       struct api_variants *v, struct api_error *err)
{
    const json_t *m;
    memset(v, 0, sizeof *v);
    v->heads = s->heads;
    v->n_q = s->n_q;
    v->n_k = s->n_k;
    bool ok = ((m = api_member(doc, "rope")) == NULL || read_rope(m, prefix, s, v, err)) &&
              read_scalars(doc, prefix, s, v, err) &&
              ((m = api_member(doc, "alibi")) == NULL || read_alibi(m, prefix, s, v, err)) &&
              ((m = api_member(doc, "window")) == NULL || read_window(m, prefix, v, err)) &&
              ((m = api_member(doc, "dropout")) == NULL || read_dropout(m, prefix, v, err)) &&
              api_masks_read(doc, prefix, s->n_q, s->n_k, &v->masks, err);
    if (!ok) {
        api_variants_deinit(v);
        return false;
    }
    v->any = v->has_rope || v->softcap > 0 || v->alibi || v->window || v->sink || v->dropout ||
             api_masks_hide(&v->masks) || v->masks.prefix > 0;
    return true;
}

void api_variants_set_top_left(struct api_variants *v, bool on)
{
    v->masks.top_left = on;
    v->any |= on;
}

void api_variants_deinit(struct api_variants *v)
{
    attn_rope_release(&v->rope);
    free(v->positions_q);
    free(v->positions_k);
    free(v->alibi_slopes);
    free(v->sink_logits);
    api_masks_deinit(&v->masks);
    memset(v, 0, sizeof *v);
}

struct attn_variants api_variants_for_head(const struct api_variants *v, size_t h)
{
    struct attn_variants out = {
        .rope = v->has_rope ? &v->rope : NULL,
        .softcap = v->softcap,
        .alibi = v->alibi,
        .alibi_slope = v->alibi ? v->alibi_slopes[h] : 0,
        .window = v->window, .has_left = v->has_left, .has_right = v->has_right,
        .left = v->left, .right = v->right,
        .sink_tokens = v->sink_tokens,
        .sink = v->sink,
        .sink_logit = v->sink ? v->sink_logits[h] : 0,
        .dropout = v->dropout, .dropout_p = v->dropout_p,
        .dropout_seed = (uint64_t)v->dropout_seed,
        /* k runs row-major over (h, n_q, n_k): head h's cells start after h grids. */
        .dropout_first = (uint64_t)v->dropout_offset + (uint64_t)h * (uint64_t)v->n_q * (uint64_t)v->n_k,
    };
    api_masks_apply(&v->masks, &out);
    return out;
}

bool api_variants_check_include(const struct api_variants *v, const json_t *node, const char *ptr,
                                struct api_error *err)
{
    static const struct {
        const char *step, *field;
    } produced_by[] = {
        { "q_rope", "rope" }, { "k_rope", "rope" }, { "softcapped", "softcap" },
        { "dropout_keep", "dropout" }, { "dropped", "dropout" },
    };
    const bool runs[] = { v->has_rope, v->has_rope, v->softcap > 0, v->dropout, v->dropout };
    if (!json_is_array(node))
        return true;
    for (size_t i = 0; i < json_array_size(node); i++) {
        const char *name = json_string_value(json_array_get(node, i));
        for (size_t s = 0; name != NULL && s < sizeof runs / sizeof runs[0]; s++) {
            if (runs[s] || strcmp(name, produced_by[s].step) != 0)
                continue;
            api_error_set(err, API_INVALID_VALUE, "include names %s, a step of a variant this "
                          "request does not ask for", name);
            api_error_at(err, "%s/%zu", ptr, i);
            api_error_hint(err, "%s is the step of \"%s\": send \"%s\", or leave %s out of "
                           "include", name, produced_by[s].field, produced_by[s].field, name);
            return false;
        }
    }
    return true;
}

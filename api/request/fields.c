/*
 * api/request/fields.c — strict readers for request fields (see fields.h).
 */
#include "api/request/fields.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/i18n/lang.h"
#include "api/json/arena.h"
#include "api/json/numfmt.h"
#include "api/json/read.h"
#include "api/json/spare_threads.h"

const char *api_json_kind(const json_t *node)
{
    switch (json_typeof(node)) {
    case JSON_OBJECT: return API_TR("an object");
    case JSON_ARRAY: return API_TR("an array");
    case JSON_STRING: return API_TR("a string");
    case JSON_INTEGER:
    case JSON_REAL: return API_TR("a number");
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return API_TR("a value");
}

void api_pointer_escape(const char *key, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = key; *p != '\0' && n + 3 < size; p++) {
        if (*p == '~' || *p == '/') {
            out[n++] = '~';
            out[n++] = *p == '~' ? '0' : '1';
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

/* Copies what fits of s into buf[at, size - 1); returns where the copy ended. */
static size_t copy_cut(char *buf, size_t size, size_t at, const char *s)
{
    size_t n = strlen(s);
    if (n > size - 1 - at)
        n = size - 1 - at;
    memcpy(buf + at, s, n);
    return at + n;
}

void api_field_pointer(char *buf, size_t size, const char *prefix, const char *field)
{
    if (size == 0)
        return;
    size_t at = copy_cut(buf, size, 0, prefix);
    at = copy_cut(buf, size, at, "/");
    at = copy_cut(buf, size, at, field);
    buf[at] = '\0';
}

json_t *api_member(const json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    return json_is_null(v) ? NULL : v;
}

/* ---- nearest names ---- */

/*
 * The edit distance ignoring ASCII case, a swap of two neighbours counting as one edit
 * (optimal string alignment): "maks" is one typo away from "mask", not two. Words
 * longer than 63 bytes are cut.
 */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, 63), lb = strnlen(b, 63);
    size_t before[64], prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        int ai = tolower((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= lb; j++) {
            int bj = tolower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ai != bj);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == bj && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            cur[j] = best;
        }
        memcpy(before, prev, (lb + 1) * sizeof prev[0]);
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

const char *api_nearest_name(const char *word, const char *const *names, size_t n)
{
    const char *best = n > 0 ? names[0] : "";
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}

/*
 * Names people bring from papers and from PyTorch / JAX, mapped to attnd's.
 * Edit distance alone would send "keys" to "bias".
 */
static const struct { const char *alias, *field; } aliases[] = {
    { "query", "q" }, { "queries", "q" }, { "Q", "q" },
    { "key", "k" }, { "keys", "k" }, { "K", "k" },
    { "value", "v" }, { "values", "v" }, { "V", "v" },
    { "attn_mask", "mask" }, { "attention_mask", "mask" }, { "key_padding_mask", "mask" },
    { "is_causal", "mask" }, { "causal", "mask" },
    { "attn_bias", "bias" }, { "temperature", "scale" }, { "decimals", "round" },
    { "num_heads", "heads" }, { "n_heads", "heads" }, { "num_kv_heads", "kv_heads" },
    { "n_kv_heads", "kv_heads" }, { "embed_dim", "d_model" },
};

static const char *alias_target(const char *word, const struct api_field *known, size_t n_known)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(word, aliases[i].alias) != 0)
            continue;
        for (size_t j = 0; j < n_known; j++)
            if (strcmp(known[j].name, aliases[i].field) == 0)
                return known[j].name;
    }
    return NULL;
}

const char *api_close_name(const char *word, const char *const *names, size_t n)
{
    const char *near = api_nearest_name(word, names, n);
    size_t len = strnlen(word, 63), allowed = len / 3 > 1 ? len / 3 : 1;
    return n > 0 && edit_distance(word, near) <= allowed ? near : NULL;
}

/* What is known near the unknown `key`: an alias's target or a close name, else NULL. */
static const char *suggestion(const char *key, const struct api_field *known, size_t n_known,
                              const char *const *names, size_t n)
{
    const char *near = alias_target(key, known, n_known);
    return near != NULL ? near : api_close_name(key, names, n);
}

/* The hint for one unknown key: the field meant, or, when none is close, the list. */
static void unknown_hint(const char *near, const struct api_field *known, size_t n_known,
                         const char *list, char *hint, size_t size)
{
    if (near == NULL) {
        snprintf(hint, size, API_TR("no known field is close; the fields are %s"), list);
        return;
    }
    const char *meaning = "";
    for (size_t i = 0; i < n_known; i++)
        if (strcmp(known[i].name, near) == 0)
            meaning = api_tr(known[i].meaning);
    snprintf(hint, size, API_TR("did you mean \"%s\" (%s)?"), near, meaning);
}

bool api_check_fields(const json_t *obj, const char *pointer, const struct api_field *known,
                      size_t n_known, struct api_error *err)
{
    const char *names[32];
    size_t n = n_known < 32 ? n_known : 32;
    for (size_t i = 0; i < n; i++)
        names[i] = known[i].name;
    char list[256] = "";
    for (size_t i = 0, used = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 names[i]);

    /* Every unknown member at once: errors[0] is the first, errors[1..] the rest. */
    size_t unknown = 0, said = 0;
    char quoted[200] = "";
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool found = false;
        for (size_t i = 0; i < n_known && !found; i++)
            found = strcmp(key, known[i].name) == 0;
        if (found)
            continue;
        if (said < sizeof quoted)
            said += (size_t)snprintf(quoted + said, sizeof quoted - said, "%s\"%.40s\"",
                                     unknown ? ", " : "", key);
        /* errors[] shows the first 1 + API_ERROR_MORE and the detail quotes what fits in
           `quoted`: the "did you mean" of any other key would be computed for nothing,
           and past both nothing more is said (a 16 MiB body of unknown keys took seconds
           when every key got its hint). */
        if (unknown >= 1 + API_ERROR_MORE) {
            unknown++;
            if (said >= sizeof quoted - 1)
                break;
            continue;
        }
        char escaped[128], ptr[256], hint[320], detail[96];
        api_pointer_escape(key, escaped, sizeof escaped);
        snprintf(ptr, sizeof ptr, "%s/%s", pointer, escaped);
        unknown_hint(suggestion(key, known, n_known, names, n), known, n_known, list, hint,
                     sizeof hint);
        snprintf(detail, sizeof detail, API_TR("unknown field \"%.64s\""), key);
        if (unknown++ == 0) {
            api_error_set(err, API_UNKNOWN_FIELD, "%s", "");
            api_error_at(err, "%s", ptr);
            api_error_hint(err, "%s", hint);
            memcpy(err->culprit_detail, detail, sizeof err->culprit_detail);
        } else {
            api_error_add(err, ptr, detail, hint);
        }
    }
    if (unknown == 0)
        return true;
    if (unknown == 1)
        err->culprit_detail[0] = '\0'; /* the detail below names it alone */
    if (unknown > 1)
        snprintf(err->detail, sizeof err->detail, API_TR("unknown fields %s; known fields: %s"),
                 quoted, list);
    else
        snprintf(err->detail, sizeof err->detail, API_TR("unknown field %s; known fields: %s"),
                 quoted, list);
    return false;
}

/* ---- scalars ---- */

bool api_read_positive(const json_t *node, const char *pointer, const char *name, double *out,
                       struct api_error *err)
{
    if (json_is_number(node)) {
        double x = json_number_value(node);
        if (isfinite(x) && x > 0) {
            *out = x;
            return true;
        }
    }
    char shown[API_NUMBER_MAX] = "";
    if (json_is_number(node))
        api_format_double(json_number_value(node), shown);
    api_error_set(err, API_INVALID_VALUE, "%s must be a number above 0, not %s%s%s", name,
                  api_json_kind(node), shown[0] ? " " : "", shown);
    api_error_at(err, "%s", pointer);
    api_error_hint(err, "leave %s out for 1/sqrt(d_k); 1 reproduces unscaled dot products",
                   name);
    return false;
}

bool api_read_int_range(const json_t *node, const char *pointer, const char *name, long long lo,
                        long long hi, long long *out, struct api_error *err)
{
    /* An integer is compared as one: through a double, a seed past 2^53 lost its low bits
     * and INT64_MAX became 2^63, out of a long long's range. */
    if (json_is_integer(node) && json_integer_value(node) >= lo && json_integer_value(node) <= hi) {
        *out = json_integer_value(node);
        return true;
    }
    if (json_is_real(node)) {
        double x = json_number_value(node);
        if (x == floor(x) && x >= (double)lo && x <= (double)hi && x < 0x1p63) {
            *out = (long long)x;
            return true;
        }
    }
    char shown[API_NUMBER_MAX] = "";
    if (json_is_number(node))
        api_format_double(json_number_value(node), shown);
    api_error_set(err, API_INVALID_VALUE, "%s must be an integer from %lld to %lld, not %s%s%s",
                  name, lo, hi, api_json_kind(node), shown[0] ? " " : "", shown);
    api_error_at(err, "%s", pointer);
    return false;
}

/* "a", "b" or "c" into out, for messages. */
static void join_choices(const char *const *choices, size_t n, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s\"%s\"",
                                 i == 0 ? "" : (i + 1 == n ? API_TR(" or ") : ", "), choices[i]);
}

bool api_read_choice(const json_t *node, const char *pointer, const char *name,
                     const char *const *choices, size_t n, size_t *index, struct api_error *err)
{
    char list[256];
    join_choices(choices, n, list, sizeof list);
    if (json_is_string(node)) {
        const char *s = json_string_value(node);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(s, choices[i]) == 0) {
                *index = i;
                return true;
            }
        }
        api_error_set(err, API_INVALID_VALUE, "%s is \"%.64s\"; it must be %s", name, s, list);
        const char *near = api_close_name(s, choices, n);
        if (near != NULL)
            api_error_hint(err, "did you mean \"%s\"?", near);
    } else {
        api_error_set(err, API_INVALID_VALUE, "%s is %s; it must be %s", name,
                      api_json_kind(node), list);
    }
    api_error_at(err, "%s", pointer);
    return false;
}

bool api_read_name_set(const json_t *node, const char *pointer, const char *name,
                       const char *const *names, size_t n, unsigned long *bits,
                       struct api_error *err)
{
    char list[512];
    join_choices(names, n, list, sizeof list);
    if (!json_is_array(node)) {
        api_error_set(err, API_INVALID_VALUE, "%s is %s; it must be a list of names: %s", name,
                      api_json_kind(node), list);
        api_error_at(err, "%s", pointer);
        return false;
    }
    *bits = 0;
    for (size_t i = 0; i < json_array_size(node); i++) {
        const json_t *item = json_array_get(node, i);
        const char *s = json_is_string(item) ? json_string_value(item) : NULL;
        size_t j = 0;
        while (s != NULL && j < n && strcmp(s, names[j]) != 0)
            j++;
        if (s != NULL && j < n) {
            *bits |= 1ul << j;
            continue;
        }
        if (s != NULL) {
            api_error_set(err, API_INVALID_VALUE, "%s lists \"%.64s\", which is not one of %s",
                          name, s, list);
            const char *near = api_close_name(s, names, n);
            if (near != NULL)
                api_error_hint(err, "did you mean \"%s\"?", near);
        } else {
            api_error_set(err, API_INVALID_VALUE, "%s item %zu is %s, not a name; names are %s",
                          name, i, api_json_kind(item), list);
        }
        api_error_at(err, "%s/%zu", pointer, i);
        return false;
    }
    return true;
}

bool api_read_string_list(const json_t *node, const char *pointer, const char *name,
                          struct api_error *err)
{
    if (!json_is_array(node)) {
        api_error_set(err, API_INVALID_VALUE, "%s is %s; it must be a list of strings", name,
                      api_json_kind(node));
        api_error_at(err, "%s", pointer);
        return false;
    }
    for (size_t i = 0; i < json_array_size(node); i++) {
        const json_t *item = json_array_get(node, i);
        if (json_is_string(item))
            continue;
        api_error_set(err, API_INVALID_VALUE, "%s item %zu is %s, not a string", name, i,
                      api_json_kind(item));
        api_error_at(err, "%s/%zu", pointer, i);
        api_error_hint(err, "labels are names shown next to the rows: write them in quotes");
        return false;
    }
    return true;
}

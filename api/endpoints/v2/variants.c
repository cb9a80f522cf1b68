/*
 * api/endpoints/v2/variants.c — V2's flat variant parameters, read as /v1's fields
 * (see v2/variants.h): the parameters become the object /v1 would have been sent,
 * its reader checks it, and a problem's pointer is turned back into the parameter's.
 */
#include "api/endpoints/v2/variants.h"

#include <string.h>

/* Sets obj[key] = value (a new reference taken over); false when memory ran out. */
static bool put(json_t *obj, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(obj, key, value) == 0;
}

/* Copies params[name] into obj[key] when present; a window side of -1 becomes null. */
static bool copy(json_t *obj, const char *key, const json_t *params, const char *name,
                 bool minus_one_is_null)
{
    json_t *x = json_object_get(params, name);
    if (x == NULL)
        return true;
    if (minus_one_is_null && json_is_number(x) && json_number_value(x) == -1)
        return put(obj, key, json_null());
    return put(obj, key, json_incref(x) ? x : NULL);
}

/* obj[key] = {members from params}, when any of them is present. */
static bool group(json_t *doc, const char *key, const json_t *params, const char *const *names,
                  const char *const *members, size_t n, bool minus_one_is_null)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= json_object_get(params, names[i]) != NULL;
    if (!any)
        return true;
    json_t *obj = json_object();
    if (!put(doc, key, obj))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!copy(obj, members[i], params, names[i], minus_one_is_null))
            return false;
    return true;
}

/* The /v1 document the parameters mean; NULL when memory ran out. */
static json_t *as_v1(const json_t *params)
{
    static const char *const rope[] = { "rope_base", "rope_layout", "rope_fraction" };
    static const char *const rope_m[] = { "base", "layout", "fraction" };
    static const char *const window[] = { "window_left", "window_right" };
    static const char *const window_m[] = { "left", "right" };
    static const char *const dropout[] = { "dropout_p", "dropout_seed" };
    static const char *const dropout_m[] = { "p", "seed" };
    static const char *const plain[] = { "softcap", "alibi", "sink_tokens", "sink_logit" };
    json_t *doc = json_object();
    bool ok = doc != NULL && group(doc, "rope", params, rope, rope_m, 3, false) &&
              group(doc, "window", params, window, window_m, 2, true) &&
              group(doc, "dropout", params, dropout, dropout_m, 2, false);
    for (size_t i = 0; ok && i < 4; i++)
        ok = copy(doc, plain[i], params, plain[i], false);
    if (!ok) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* "/rope/base" → "/parameters/rope_base", and so on. */
static void repoint(struct api_error *err)
{
    static const char *const from[] = { "/rope/base", "/rope/layout", "/rope/fraction", "/rope",
                                        "/window/left", "/window/right", "/dropout/p",
                                        "/dropout/seed", "/softcap", "/alibi", "/sink_tokens",
                                        "/sink_logit" };
    static const char *const to[] = { "rope_base", "rope_layout", "rope_fraction",
                                      "rope_fraction", "window_left", "window_right",
                                      "dropout_p", "dropout_seed", "softcap", "alibi",
                                      "sink_tokens", "sink_logit" };
    if (!err->has_pointer)
        return;
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        size_t n = strlen(from[i]);
        if (strncmp(err->pointer, from[i], n) == 0 &&
            (err->pointer[n] == '\0' || err->pointer[n] == '/')) {
            api_error_at(err, "/parameters/%s", to[i]);
            return;
        }
    }
}

bool api_v2_read_variants(const json_t *params, const struct api_variant_sizes *sizes,
                          struct api_variants *v, struct api_error *err)
{
    memset(v, 0, sizeof *v);
    if (params == NULL)
        return true;
    json_t *doc = as_v1(params);
    if (doc == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' parameters");
        return false;
    }
    bool ok = api_variants_read(doc, "", sizes, v, err);
    json_decref(doc);
    if (!ok)
        repoint(err);
    return ok;
}
